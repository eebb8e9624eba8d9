import Synchronization
import Testing

@testable import HTTPAPI

/// The request timeout's clock on its own: what the sweep cancels, and what `finish` says.
@Suite struct RequestDeadlinesTests {
    @Test func theSweepCancelsOnlyRequestsPastTheirLimit() async throws {
        let deadlines = RequestDeadlines(limit: .milliseconds(50))
        let cancelled = Mutex<[String]>([])
        let early = deadlines.register { cancelled.withLock { $0.append("early") } }
        deadlines.sweep()
        #expect(cancelled.withLock { $0 }.isEmpty)
        try await Task.sleep(for: .milliseconds(80))
        let late = deadlines.register { cancelled.withLock { $0.append("late") } }
        deadlines.sweep()
        #expect(cancelled.withLock { $0 } == ["early"])
        #expect(deadlines.finish(early) == false)  // its limit passed: the caller answers 503
        #expect(deadlines.finish(late) == true)
        deadlines.sweep()
        #expect(cancelled.withLock { $0 } == ["early"])  // a finished request is never cancelled
    }
}
