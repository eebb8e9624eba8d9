import Synchronization
import Testing

@testable import HealthSharing

/// An import's upload is stored at a bounded rate while others upload, as fast as it comes
/// otherwise; the schedule gives no credit for time in which nothing was stored.
@Suite("Import uploads paced while others upload")
struct ImportUploadPaceTests {
    @Test func whileOthersUploadChunksFollowTheRate() {
        let others = Atomic(true)
        let pace = ImportUploadPace(bytesPerSecond: 1 << 20) { others.load(ordering: .relaxed) }
        let start = ContinuousClock.now
        #expect(pace.reserve(1 << 19, at: start) == nil)  // the first goes at once
        #expect(pace.reserve(1 << 19, at: start) == .milliseconds(500))
        #expect(pace.reserve(1 << 18, at: start + .milliseconds(100)) == .milliseconds(900))
        // Long after the schedule's end: at once, and no credit saved from the idle time.
        #expect(pace.reserve(1 << 20, at: start + .seconds(10)) == nil)
        #expect(pace.reserve(1 << 18, at: start + .seconds(10)) == .seconds(1))
        // Alone: never waits, and the schedule starts again from the moment others return.
        others.store(false, ordering: .relaxed)
        #expect(pace.reserve(1 << 30, at: start + .seconds(10)) == nil)
        others.store(true, ordering: .relaxed)
        #expect(pace.reserve(1 << 18, at: start + .seconds(11)) == nil)
        #expect(pace.reserve(1 << 18, at: start + .seconds(11)) == .milliseconds(250))
    }

    @Test func anUnboundedPaceNeverWaits() {
        for rate in [nil, 0, -1] as [Int?] {
            let pace = ImportUploadPace(bytesPerSecond: rate) { true }
            let now = ContinuousClock.now
            #expect(pace.reserve(1 << 30, at: now) == nil && pace.reserve(1 << 30, at: now) == nil)
        }
    }

    @Test func aCancelledWaitStoresTheChunkAtOnce() async {
        let pace = ImportUploadPace(bytesPerSecond: 1) { true }
        await pace.admit(3_600)  // books an hour
        let waiting = Task { await pace.admit(1) }
        waiting.cancel()
        let started = ContinuousClock.now
        await waiting.value
        #expect(ContinuousClock.now - started < .seconds(60))
    }
}
