import Synchronization

/// The body's result, or `TimedOut` as soon as the limit passes (the body is then cancelled).
///
/// For probes that must answer promptly even while a pool waits for an unreachable server:
/// `/readyz`, and the replica's health check, lease and catch-up wait. The answer never waits
/// for the body to honour its cancellation: PostgresNIO does not stop a query already sent
/// when its task is cancelled, so a task group (which awaits every child) would hold the caller
/// for as long as a dead replica's socket takes to fail. A body that outlives the limit ends in
/// the background; its result is dropped.
package func withTimeout<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let race = FirstOutcome<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            race.await(continuation)
            let work = Task {
                do { race.finish(.success(try await body())) } catch { race.finish(.failure(error)) }
            }
            let timer = Task {
                try? await Task.sleep(for: limit)
                race.finish(.failure(TimedOut()))
            }
            race.whenFinished {
                work.cancel(); timer.cancel()
            }
        }
    } onCancel: {
        race.finish(.failure(CancellationError()))
    }
}

/// What `withTimeout` throws when the limit passes first.
package struct TimedOut: Error {}

/// The first of several outcomes, handed to one waiting continuation; whatever arrives in
/// whichever order (an outcome before the continuation, a cancellation before the tasks exist).
private final class FirstOutcome<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var outcome: Result<T, any Error>?
        var resumed = false
        var cleanup: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())

    func await(_ continuation: CheckedContinuation<T, any Error>) {
        let ready: Result<T, any Error>? = state.withLock { state in
            guard let outcome = state.outcome, !state.resumed else {
                state.continuation = continuation
                return nil
            }
            state.resumed = true
            return outcome
        }
        if let ready { continuation.resume(with: ready) }
    }

    func finish(_ outcome: Result<T, any Error>) {
        let (continuation, cleanup): (CheckedContinuation<T, any Error>?, (@Sendable () -> Void)?) = state.withLock { state in
            guard state.outcome == nil else { return (nil, nil) }
            state.outcome = outcome
            guard let continuation = state.continuation, !state.resumed else { return (nil, state.cleanup) }
            state.resumed = true
            state.continuation = nil
            return (continuation, state.cleanup)
        }
        continuation?.resume(with: outcome)
        cleanup?()
    }

    func whenFinished(_ cleanup: @escaping @Sendable () -> Void) {
        let finished = state.withLock { state in
            state.cleanup = cleanup
            return state.outcome != nil
        }
        if finished { cleanup() }
    }
}
