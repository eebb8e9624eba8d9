import AccessManager
import Hummingbird

/// Lets through only callers signed in with a login token: the routes that manage an account
/// (API keys, webhooks, sessions) refuse API keys with 403, so a leaked key can neither mint its
/// own successor before it is revoked nor point the organisation's webhook elsewhere.
struct LoginSessionRequiredMiddleware<Context: AuthenticatedRequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard case .accessToken = context.principal.credential else { throw AuthenticationError.loginSessionRequired }
        return try await next(request, context)
    }
}
