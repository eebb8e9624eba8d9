import Hummingbird
import ServiceLifecycle
import Synchronization

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
        return try await withoutActuallyEscaping(next) { next in
            nonisolated(unsafe) let next = next
            let handler = Task { try await next(request, context) }
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

/// The deadlines of the requests in progress, and one sweep that cancels those past theirs — a
/// lock and a dictionary entry per request instead of a timer. A request is cancelled between
/// `limit` and `limit` plus one tick (a second at most; a tenth of the limit when that is shorter).
final class RequestDeadlines: Service, Sendable {
    let limit: Duration
    private let tick: Duration
    private let clock = ContinuousClock()
    private let running = Mutex<(next: UInt64, entries: [UInt64: Entry])>((0, [:]))

    private struct Entry {
        let deadline: ContinuousClock.Instant
        let cancel: @Sendable () -> Void
    }

    init(limit: Duration) {
        self.limit = limit
        self.tick = min(.seconds(1), limit / 10)
    }

    /// Starts the clock of a request; `cancel` is called once its limit has passed.
    func register(cancel: @escaping @Sendable () -> Void) -> UInt64 {
        let entry = Entry(deadline: clock.now + limit, cancel: cancel)
        return running.withLock { state in
            state.next &+= 1
            state.entries[state.next] = entry
            return state.next
        }
    }

    /// Stops the clock of a request: false when its limit had passed and it was cancelled.
    func finish(_ registration: UInt64) -> Bool {
        running.withLock { $0.entries.removeValue(forKey: registration) != nil }
    }

    /// Cancels every request past its deadline.
    func sweep() {
        let now = clock.now
        let expired = running.withLock { state in
            let past = state.entries.filter { $0.value.deadline <= now }
            for key in past.keys { state.entries.removeValue(forKey: key) }
            return past.values.map(\.cancel)
        }
        for cancel in expired { cancel() }
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: self.tick)
                self.sweep()
            }
        }
    }
}
