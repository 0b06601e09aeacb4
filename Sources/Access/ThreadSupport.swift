import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Carries a value that is only ever touched on one thread across a `@Sendable` hop.
package struct Unchecked<Value>: @unchecked Sendable {
    package let value: Value
    package init(_ value: Value) { self.value = value }
}

/// The same, as the store, recordings and logs name it.
package typealias UnsafeTransfer<T> = Unchecked<T>

/// A counting semaphore for one waiter.
package final class Semaphore: @unchecked Sendable {
    private var semaphore = sem_t()
    package init() { sem_init(&semaphore, 0, 0) }
    package func signal() { sem_post(&semaphore) }
    package func wait() { while sem_wait(&semaphore) != 0 && errno == EINTR {} }
}

/// One relaxed atomic counter, as a class so that counters can be kept in arrays. Inlinable:
/// the room's latency histogram counts every broadcast from another module.
package final class Counter: Sendable {
    @usableFromInline let atomic = Atomic<Int>(0)
    package init() {}
    @inlinable package func add(_ amount: Int) { atomic.add(amount, ordering: .relaxed) }
    @inlinable package var value: Int { atomic.load(ordering: .relaxed) }
}
