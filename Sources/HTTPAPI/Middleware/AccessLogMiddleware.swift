import Data4HelpCore
import Hummingbird
import Logging

/// One log line per request: method, route template, status and duration. Never the query
/// string, headers or body, which may carry personal data or secrets.
struct AccessLogMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        let elapsed = ContinuousClock.now - start
        let milliseconds = elapsed.inSeconds * 1000
        context.logger.info(
            "request",
            metadata: [
                "http.method": "\(request.method.rawValue)",
                "http.route": "\(context.endpointPath ?? "unmatched")",
                "http.status": "\(response.status.code)",
                "duration.ms": "\((milliseconds * 10).rounded() / 10)",
            ])
        return response
    }
}
