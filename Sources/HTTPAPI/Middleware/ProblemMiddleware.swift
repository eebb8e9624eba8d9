import Hummingbird
import Logging

/// Turns every error thrown below it into an `application/problem+json` response.
struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let problem = ErrorMapping.problem(for: error, logger: context.logger)
            let requestId = context.logger[metadataKey: RequestIDMiddleware<Context>.metadataKey].map { "\($0)" }
            return problem.response(instance: request.uri.path, requestId: requestId)
        }
    }
}
