import TextSafety

/// One field of the status line: its forms from the fullest to the shortest, each with the
/// importance (0 the most important) at which it is given up for the next form, or, for the
/// last form, left out whole.
struct StatusField: Equatable {
    struct Form: Equatable {
        var text: String
        var importance: Int
    }

    var forms: [Form]
    /// Whether this field says that something is wrong (offline, refused, an error): its full
    /// form goes to the detail line when the status line has no room for it.
    var isProblem = false

    init(_ text: String, _ importance: Int) { forms = [Form(text: text, importance: importance)] }

    /// A field with a full form and a short one (`○ offline 0.8 s`).
    init(full: String, _ fullImportance: Int, short: String, _ shortImportance: Int, problem: Bool = false) {
        forms = [Form(text: full, importance: fullImportance), Form(text: short, importance: shortImportance)]
        isProblem = problem
    }

    var text: String { forms[0].text }
}

/// Importance of each field (0 the most important; the highest is given up first). Being
/// offline, refused or in error comes first at every width (issue 47.1); its full reason
/// is given up first, because the detail line above the status line shows it then.
enum StatusImportance {
    static let problem = 0, role = 1, connection = 2, roleHint = 3, documentDiffers = 4, progress = 5, driver = 6
    static let followers = 7, moved = 8, roundTrip = 9, section = 10, problemReason = 11
}

/// The status line: a problem's short form (offline, refused, an error), the role,
/// connection, direction and progress, driver, followers, when the presenter last moved,
/// the link's round trip, section. When they do not fit, fields are shortened or left out
/// whole, least important first, never one cut in the middle.
func status(_ model: ViewerModel) -> String {
    fitFields(statusFields(model), width: model.width).line
}

/// The full reasons the status line had no room for, one row each (the view shows them
/// on the rows just above it).
func statusDetails(_ model: ViewerModel) -> [String] {
    fitFields(statusFields(model), width: model.width).details
}

/// The status fields in display order.
func statusFields(_ model: ViewerModel) -> [StatusField] {
    typealias I = StatusImportance
    var fields = [StatusField]()
    // What is wrong, first.
    switch model.connection {
    case _ where model.playback != nil: break
    case .waiting(let delay, let reason):
        let left = formatSeconds(model.retryAtMs.map { max(0, Double($0 - model.nowMs) / 1000) } ?? delay)
        fields.append(StatusField(full: "○ offline, retry in \(left) (\(reason))", I.problemReason, short: "○ offline \(left)", I.problem, problem: true))
    case .refused(let reason):
        fields.append(StatusField(full: "✕ \(reason) – press q", I.problemReason, short: "✕ \(shortRefusal(reason))", I.problem, problem: true))
    case .stopped: fields.append(StatusField("○ closed", I.problem))
    case .connecting, .connected: break
    }
    // A refusal of one message (too_large, rate_limited…) matters more than what follows;
    // the error that came with a refusal of the connection says what the refusal says.
    if let notice = model.notice, !repeatsRefusal(notice, model.connection) {
        let code = notice.prefix { $0 != ":" }
        fields.append(StatusField(full: "⚠ \(notice)", I.problemReason, short: "⚠ \(code)", I.problem, problem: true))
    }
    fields.append(roleField(model))
    if model.documentDiffers { fields.append(StatusField("⚠ DOCUMENT DIFFERS from the room's", I.documentDiffers)) }
    switch model.connection {
    case _ where model.playback != nil: fields.append(StatusField(model.playback!, I.connection))
    case .connecting: fields.append(StatusField("connecting…", I.connection))
    case .connected: fields.append(StatusField("● live", I.connection))
    case .waiting, .refused, .stopped: break  // said first
    }
    let arrow = switch model.direction {
    case .up: "↑"
    case .down: "↓"
    case .none: "·"
    }
    if let layout = model.layout, layout.rowCount > 0 {
        // A document that fits the screen has no progress to show: all of it is in view.
        let progress = model.maxTop > 0 ? "\(arrow) \(Int((Double(model.top) / Double(model.maxTop) * 100).rounded()))%" : "\(arrow) all"
        fields.append(StatusField(progress, I.progress))
    }
    // The room's driver and followers only once the room has said them: a view that never
    // joined (connecting, offline, refused) knows neither (it was shown `nobody driving`).
    if model.you != nil || model.connection == .connected || model.playback != nil {
        if let driver = model.driver {
            fields.append(StatusField("driver " + (driver == model.you ? "you" : model.driverName ?? String(driver.prefix(6))), I.driver))
        } else {
            fields.append(StatusField("nobody driving", I.driver))
        }
        let followers = model.presence.followers
        fields.append(StatusField("\(followers) follower\(followers == 1 ? "" : "s")"
            + (model.presence.detached > 0 ? " (\(model.presence.detached) detached)" : ""), I.followers))
    }
    if let search = searchField(model) { fields.append(search) }
    if let roundTrip = model.roundTripMs, model.connection == .connected { fields.append(StatusField("rtt \(roundTrip) ms", I.roundTrip)) }
    if model.role == .follower, let moved = model.movedAtMs, model.nowMs >= moved {
        let seconds = (model.nowMs - moved) / 1000
        fields.append(StatusField(seconds < 1 ? "moved just now" : "moved \(seconds < 60 ? "\(seconds) s" : "\(seconds / 60) min") ago", I.moved))
    }
    if let layout = model.layout, let section = layout.section(atRow: model.top) {
        fields.append(StatusField("§ \(InlineMarkup.plain(layout.document.blocks[section].text))", I.section))
    }
    return fields
}

/// The role, with what its keys do where there is room. Refused or closed, no key helps:
/// the role alone (a refused presenter was shown `t: take control`).
private func roleField(_ model: ViewerModel) -> StatusField {
    typealias I = StatusImportance
    switch model.connection {
    case .refused, .stopped: return StatusField(model.role == .presenter ? "PRESENTER" : "FOLLOWER", I.role)
    default: break
    }
    switch model.role {
    case .presenter where model.isDriving: return StatusField("PRESENTING", I.role)
    case .presenter where model.following:
        return StatusField(full: "PRESENTER, FOLLOWING the driver (t: take control)", I.roleHint, short: "PRESENTER, FOLLOWING", I.role)
    case .presenter: return StatusField(full: "PRESENTER, DETACHED (f: follow, t: take control)", I.roleHint, short: "PRESENTER, DETACHED", I.role)
    case .follower where model.following: return StatusField("FOLLOWING", I.role)
    case .follower: return StatusField(full: "DETACHED – press f to follow", I.roleHint, short: "DETACHED (f)", I.role)
    }
}

/// Whether `notice` (`code: message`, the server's error) only repeats the reason the
/// connection was refused with: it is said once, as the refusal (`✕ wrong key`).
private func repeatsRefusal(_ notice: String, _ connection: ConnectionStatus) -> Bool {
    guard case .refused(let reason) = connection, !reason.isEmpty else { return false }
    return notice.hasSuffix(reason)
}

/// A refusal in a few words, for the narrowest status line (the full reason is on the
/// detail line): the server's reasons name what was wrong.
func shortRefusal(_ reason: String) -> String {
    let lower = reason.lowercased()
    if lower.contains("too many") { return "too many tries" }
    if lower.contains("token") { return lower.contains("wrong") || lower.contains("expired") ? "bad token" : "token refused" }
    if lower.contains("wrong") && lower.contains("key") { return "wrong key" }
    if lower.contains("private") || lower.contains("follow key") { return "needs follow key" }
    if lower.contains("requires a presenter key") { return "needs a key" }
    if lower.contains("locked") { return "room locked" }
    if lower.contains("does not resolve") { return "unknown host" }
    if let status = lower.firstMatch(of: /http (\d{3})/)?.1 { return "refused (\(status))" }
    return "refused"
}

/// The fields, two spaces apart after one leading space, within `width` columns: the
/// least important form is given up (for the field's next form, or the field left out
/// whole) until the rest fit; only the most important one alone is ever cut (by `fit`).
/// A problem not shown in full is one of the details.
func fitFields(_ fields: [StatusField], width: Int) -> (line: String, details: [String]) {
    var kept = fields.map { (field: $0, form: 0) }
    func line() -> String { " " + kept.map { $0.field.forms[$0.form].text }.joined(separator: "  ") }
    // Each form's width, measured once (as the line shows it: control characters as pictures),
    // not the whole line's again for each form given up: the status line is drawn every frame.
    let widths = fields.map { $0.forms.map { DisplayWidth.of(SafeText.display($0.text)) } }
    var used = 1 + kept.indices.reduce(0) { $0 + widths[$1][0] } + 2 * max(0, kept.count - 1)
    var origin = Array(fields.indices)  // kept[i] is fields[origin[i]]
    while used > width {
        // Of equally important forms, the one further right goes first (the line reads most
        // important first: an offline or refused field stays before a later notice).
        let least = kept.indices.reversed().max { kept[$0].field.forms[kept[$0].form].importance < kept[$1].field.forms[kept[$1].form].importance }!
        let formWidths = widths[origin[least]]
        if kept[least].form + 1 < kept[least].field.forms.count {
            used += formWidths[kept[least].form + 1] - formWidths[kept[least].form]
            kept[least].form += 1
        } else if kept.count > 1 {
            used -= formWidths[kept[least].form] + 2
            kept.remove(at: least)
            origin.remove(at: least)
        } else {
            break
        }
    }
    let shownInFull = Set(kept.filter { $0.form == 0 }.map(\.field.text))
    let details = fields.filter { $0.isProblem && !shownInFull.contains($0.text) }.map(\.text)
    return (line(), details)
}

private func formatSeconds(_ value: Double) -> String {
    let tenths = Int((value * 10).rounded())
    return "\(tenths / 10).\(tenths % 10) s"
}
