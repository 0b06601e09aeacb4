import Synchronization

/// A setting that a reload (SIGHUP) may change while the server runs: read where it is used
/// (a handshake, a request), replaced whole by `Server.reload`.
package final class Reloadable<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>

    package init(_ value: Value) { storage = Mutex(value) }

    package var value: Value { storage.withLock { $0 } }

    package func set(_ value: Value) { storage.withLock { $0 = value } }
}
