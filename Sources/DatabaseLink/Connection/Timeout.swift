/// The body's result, or `TimedOut` when it takes longer than the limit (the body is cancelled).
///
/// For probes that must answer promptly even while a pool waits for an unreachable server:
/// `/readyz`, and the replica's health check and lease.
package func withTimeout<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            throw TimedOut()
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}

/// What `withTimeout` throws when the limit passes first.
package struct TimedOut: Error {}
