import Hummingbird

/// Ends a request whose handler has not produced its response within `REQUEST_TIMEOUT_SECONDS`:
/// the handler's task is cancelled (its database work is rolled back, its lease returned) and the
/// client gets 503 with `Retry-After`. The limit covers producing the response head, not
/// streaming the body: an export, the event stream and the live WebSocket run as long as they need.
/// Requests that `exempt` names — uploads of files, whose handler reads the body as it arrives —
/// take as long as their body does.
struct RequestTimeoutMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    let deadlines: RequestDeadlines
    var exempt: @Sendable (Request) -> Bool = { _ in false }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if exempt(request) { return try await next(request, context) }
        // The handler runs in a task of its own so that the sweep can cancel it (a task group with
        // a sleeping second child did the same at twice the tasks and a timer per request: 3 % of a
        // listing's CPU). This task awaits it whatever happens, so `next` never outlives this call.
        // A read's handler runs on its connection's event loop (`EventLoopTaskExecutor`).
        return try await withoutActuallyEscaping(next) { next in
            nonisolated(unsafe) let next = next
            let handler: Task<Response, any Error>
            if request.method == .get || request.method == .head, let loop = context.connectionClosed?.eventLoop {
                handler = Task(executorPreference: EventLoopTaskExecutor(loop)) { try await next(request, context) }
            } else {
                handler = Task { try await next(request, context) }
            }
            let registration = deadlines.register { handler.cancel() }
            let result = await withTaskCancellationHandler {
                await handler.result
            } onCancel: {
                handler.cancel()
            }
            if deadlines.finish(registration) || (try? result.get()) != nil { return try result.get() }
            throw Problem(
                .serviceUnavailable, slug: "request-timeout", title: "Request took too long",
                detail: "The request did not complete within \(deadlines.limit) and was abandoned; retry it later.",
                headers: [.retryAfter: "1"]
            )
        }
    }
}
