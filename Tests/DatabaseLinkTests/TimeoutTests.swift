import DatabaseLink
import Foundation
import Synchronization
import Testing

@Suite("withTimeout answers at its limit, whatever the body does")
struct TimeoutTests {
    /// A body that ignores cancellation (as a PostgresNIO query already sent does) must not hold
    /// the caller past the limit: the probe answers `TimedOut` while the body is still running.
    /// (The body ends 30 s later on its own, so a `withTimeout` that waited for it would answer
    /// only then, with the body done — no timing assertion needed.)
    @Test func aBodyThatIgnoresCancellationDoesNotHoldTheCaller() async throws {
        let ended = Atomic<Bool>(false)
        await #expect(throws: TimedOut.self) {
            try await withTimeout(.milliseconds(100)) {
                // Not a cancellable sleep: a wait on another thread.
                await withCheckedContinuation { continuation in
                    DispatchQueue.global().asyncAfter(deadline: .now() + 30) { continuation.resume() }
                }
                ended.store(true, ordering: .relaxed)
                return 1
            }
        }
        let endedYet = ended.load(ordering: .relaxed)
        #expect(!endedYet)
    }

    @Test func aPromptBodyAnswersAndAThrowingOneThrows() async throws {
        #expect(try await withTimeout(.seconds(5)) { 42 } == 42)
        struct Refused: Error {}
        await #expect(throws: Refused.self) { try await withTimeout(.seconds(5)) { throw Refused() } }
    }

    @Test func theCallersCancellationEndsTheWait() async throws {
        let task = Task {
            try await withTimeout(.seconds(30)) {
                try await Task.sleep(for: .seconds(30)); return 0
            }
        }
        try await Task.sleep(for: .milliseconds(50))
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
