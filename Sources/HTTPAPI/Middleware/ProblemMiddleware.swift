import Hummingbird
import Logging

/// Turns every error thrown below it into an `application/problem+json` response.
/// A 404 for a known path asked with another method becomes a 405 with `Allow`.
struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    let routes: RouteTable

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            var problem = ErrorMapping.problem(for: error, logger: context.logger)
            if problem.status == 404, context.endpointPath == "NotFound" {
                let allowed = routes.allowedMethods(for: request.uri.path)
                if !allowed.isEmpty { problem = ErrorMapping.methodNotAllowed(allowed) }
            }
            let requestId = context.logger[metadataKey: RequestIDMiddleware<Context>.metadataKey].map { "\($0)" }
            return problem.response(instance: request.uri.path, requestId: requestId)
        }
    }
}
