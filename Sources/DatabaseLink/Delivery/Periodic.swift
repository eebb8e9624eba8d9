import Data4HelpCore
import Logging
import ServiceLifecycle

/// Runs `body` every `interval` (the first time after one interval, so it never races the
/// start-up migrations) until graceful shutdown or cancellation, which end it quietly: the sleep is
/// cancelled rather than waited out, and a cancelled sleep is the normal end, not an error (a
/// service that throws at shutdown makes the whole group cancel and the process exit non-zero).
/// `body` handles its own failures: a periodic job logs and retries at the next interval.
package func repeatUntilShutdown(every interval: Duration, _ body: @escaping @Sendable () async -> Void) async {
    await cancelWhenGracefulShutdown {
        while !Task.isCancelled {
            do { try await Task.sleep(for: interval) } catch { return }
            await body()
        }
    }
}

/// `repeatUntilShutdown` for a job that needs the current schema: `body` runs each interval once
/// `schemaReady` is open; a failure is logged as "`job` failed; will retry" with the error's type
/// (never its text, which may carry personal data) and tried again at the next interval.
package func repeatWhenReady(
    every interval: Duration, schemaReady: StartupGate, job: String, logger: Logger, _ body: @escaping @Sendable () async throws -> Void
) async {
    await repeatUntilShutdown(every: interval) {
        guard schemaReady.isOpen else { return }
        do {
            try await body()
        } catch {
            logger.warning("\(job) failed; will retry", metadata: ["error.type": "\(String(reflecting: type(of: error)))"])
        }
    }
}
