import ScrollModel
import Transport

/// One room member in the simulation: a real WebSocket client of a node (`InProcessClient`),
/// and what it holds (its welcome and the messages since), checked message by message against
/// the invariants a member sees (docs/cluster.md §6: I1 through `SimChecker`, I3, I5).
final class SimMember {
    let client: InProcessClient
    let node: Int
    let role: Role
    let name: String
    /// The follow key it joined with (a follower's; nil: none).
    let followKey: String?
    /// The session id the welcome gave.
    private(set) var id: String?
    private(set) var welcomed = false
    /// What the member holds: state, driver, document fingerprint.
    private(set) var state: ScrollState?
    private(set) var driver: String?
    private(set) var document: String?
    /// The driver its welcome named.
    private(set) var welcomeDriver: String?
    /// The refusals it was sent (error codes).
    private(set) var errors: [String] = []
    var alive = true
    /// The node closed its connection (a follower evicted from a room made private: 1008).
    var closed: Bool { client.closeCode != nil }
    private var read = 0
    /// Hears each message as it is taken (`SCROLLSYNC_SIM_LOG`: what every member got, and when).
    var heard: ((String) -> Void)?

    init(client: InProcessClient, node: Int, role: Role, name: String, followKey: String? = nil) {
        self.client = client
        self.node = node
        self.role = role
        self.name = name
        self.followKey = followKey
    }

    /// Takes what the node sent since, checking each message; `note` hears a broken invariant.
    func take(_ checker: inout SimChecker) {
        guard alive else { return }
        let open = client.closeCode == nil
        client.pump()
        if open, let code = client.closeCode { heard?("\(name) closed \(code)") }
        while read < client.messages.count {
            let text = client.messages[read]
            read += 1
            heard?("\(name) got \(text.prefix(140))")
            guard let event = try? ServerEvent.decode(text) else {
                checker.broke("I0", "\(name) got a message it cannot read: \(text.prefix(120))")
                continue
            }
            switch event {
            case .welcome(let welcome):
                welcomed = true
                id = welcome.you
                driver = welcome.driver
                welcomeDriver = welcome.driver
                document = welcome.doc
                if let state = welcome.state {
                    self.state = state
                    checker.saw(state, by: name)
                }
            case .state(let next):
                if let last = state, next.seq <= last.seq {
                    checker.broke("I3", "\(name) on node \(node): seq \(next.seq) after \(last.seq)")
                }
                if let driver, next.by != driver {
                    checker.broke("I5", "\(name) on node \(node): a state by \(next.by) (seq \(next.seq)) while its driver is \(driver)")
                }
                state = next
                checker.saw(next, by: name)
            case .driver(let next, _):
                driver = next
            case .document(let shared):
                document = shared.fingerprint
            case .error(let code, _):
                errors.append(code)
            case .presence:
                break
            }
        }
    }
}

/// The invariants across members (docs/cluster.md §6), and what broke them.
struct SimChecker {
    /// I1: the content each `seq` was first seen with, and by whom.
    private var contents: [Int: (state: ScrollState, member: String)] = [:]
    private(set) var broken: [String] = []

    mutating func broke(_ invariant: String, _ detail: String) {
        if broken.count < 20 { broken.append("\(invariant): \(detail)") }
    }

    mutating func saw(_ state: ScrollState, by member: String) {
        var content = state
        content.seq = 0
        if let first = contents[state.seq] {
            var firstContent = first.state
            firstContent.seq = 0
            if firstContent != content {
                broke("I1", "seq \(state.seq): \(first.member) got offset \(first.state.offset) by \(first.state.by.suffix(4)), "
                      + "\(member) got offset \(state.offset) by \(state.by.suffix(4))")
            }
        } else {
            contents[state.seq] = (state, member)
        }
    }
}
