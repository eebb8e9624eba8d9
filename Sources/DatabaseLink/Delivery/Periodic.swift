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
