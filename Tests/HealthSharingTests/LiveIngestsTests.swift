import Synchronization
import Testing

@testable import HealthSharing

/// Imported history gives way to live uploads: a batch of history waits while an upload is
/// being stored, and goes on when it ends — or after its limit, so that an import still moves
/// under a steady stream of uploads.
@Suite("Live uploads before imported history")
struct LiveIngestsTests {
    @Test func historyWaitsForAnUploadInFlightAndGoesOnWhenItEnds() async {
        let live = LiveIngests()
        live.enter()
        let returned = Flag()
        let waiting = Task {
            await live.quiet(atMost: .seconds(60))
            returned.raise()
        }
        try? await Task.sleep(for: .milliseconds(100))
        #expect(!returned.isRaised)  // still waiting while the upload is stored
        live.leave()
        let started = ContinuousClock.now
        await waiting.value
        // Ends with the upload, not at its 60-second limit (a bound far above any scheduling delay).
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(returned.isRaised && live.inFlight == 0)
    }

    @Test func historyGoesOnAfterItsLimitUnderASteadyStream() async {
        let live = LiveIngests()
        live.enter()
        defer { live.leave() }
        await live.quiet(atMost: .milliseconds(20))  // returns although the upload never ends
        #expect(live.inFlight == 1)
    }

    @Test func withoutUploadsHistoryDoesNotWait() async {
        let live = LiveIngests()
        live.enter()
        live.leave()
        await live.quiet(atMost: .seconds(3_600))
        #expect(live.inFlight == 0)
    }

    /// Imported history is stored in smaller batches while others' uploads arrive: one being
    /// stored, or one started within the window; not before any upload, and not once the window
    /// has passed since the last one started.
    @Test func uploadsArrivingWhileOneIsStoredOrOneStartedWithinTheWindow() async throws {
        let live = LiveIngests()
        #expect(!live.active(within: .seconds(1)))
        live.enter()
        #expect(live.active(within: .seconds(1)))
        try await Task.sleep(for: .milliseconds(1_100))
        #expect(live.active(within: .seconds(1)))  // still being stored
        live.leave()
        #expect(!live.active(within: .seconds(1)))  // started 1.1 s ago
        #expect(live.active(within: .seconds(60)))
        #expect(!live.active(within: .milliseconds(900)))
        live.enter()
        live.leave()
        #expect(live.active(within: .seconds(1)) && live.active(within: .milliseconds(900)))  // a window under a second counts too
    }
}

private final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func raise() { value.store(true, ordering: .relaxed) }
    var isRaised: Bool { value.load(ordering: .relaxed) }
}
