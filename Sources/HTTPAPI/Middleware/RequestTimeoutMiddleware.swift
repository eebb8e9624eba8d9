import Hummingbird

/// Ends a request whose handler has not produced its response within `REQUEST_TIMEOUT_SECONDS`:
/// the handler's task is cancelled (its database work is rolled back, its lease returned) and the
/// client gets 503 with `Retry-After`. The limit covers producing the response head, not
/// streaming the body: an export, the event stream and the live WebSocket run as long as they need.
/// Requests that `exempt` names — uploads of files, whose handler reads the body as it arrives —
/// take as long as their body does.
struct RequestTimeoutMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    let limit: Duration
    var exempt: @Sendable (Request) -> Bool = { _ in false }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if exempt(request) { return try await next(request, context) }
        // The handler runs in a child task so that it can be cancelled. The group awaits every
        // child before returning, so `next` does not outlive this call, and this task only waits
        // meanwhile, so it is never used from two tasks at once.
        return try await withoutActuallyEscaping(next) { next in
            nonisolated(unsafe) let next = next
            return try await withThrowingTaskGroup(of: Response?.self) { group in
                group.addTask { try await next(request, context) }
                group.addTask {
                    try await Task.sleep(for: limit)
                    return nil
                }
                defer { group.cancelAll() }
                guard let response = try await group.next()! else {
                    throw Problem(
                        .serviceUnavailable, slug: "request-timeout", title: "Request took too long",
                        detail: "The request did not complete within \(limit) and was abandoned; retry it later.",
                        headers: [.retryAfter: "1"]
                    )
                }
                return response
            }
        }
    }
}
