import Testing
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// What a loop owns is touched only on its thread (STYLE 18), on an embedded loop too: an
/// in-process test that calls it from elsewhere stops, as a real loop's would.
@Suite("Loop confinement")
struct LoopConfinementTests {
    #if DEBUG
    @Test func anEmbeddedLoopStopsACallFromAnotherThread() async {
        await #expect(processExitsWith: .failure) {
            let loop = try EventLoop.embedded()
            loop.advance()  // the stepping thread is the loop's thread now
            let other = spawnThread { loop.schedule(after: 1) {} }
            pthread_join(other, nil)
        }
    }
    #endif

    @Test func theSteppingThreadMaySchedule() throws {
        let loop = try EventLoop.embedded()
        loop.advance()
        var ran = false
        loop.schedule(after: 5) { ran = true }
        loop.advance(by: 10)
        #expect(ran)
    }
}
