import AccessManager
import DatabaseLink
import Hummingbird
import Logging

/// Establishes the principal of a request from its `Authorization: Bearer` header, for one
/// API surface. A missing or bad credential ends the request with 401, one of the other
/// surface with 403.
struct BearerAuthenticationMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    let authenticator: Authenticator
    let surface: Surface

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard case .bearer(let token) = AuthorizationHeader(request.headers) else {
            throw AuthenticationError.missingCredentials
        }
        var context = context
        let principal = try await authenticator.authenticate(bearer: token, on: surface)
        context.principal = principal
        context.logger[metadataKey: "account.id"] = "\(principal.account.loggableId)"
        return try await next(request, context)
    }
}

extension AccountReference {
    /// `individual:42` / `thirdparty:7`: internal ids, which identify nobody outside the database.
    var loggableId: String {
        switch self {
        case .individual(let id): "individual:\(id)"
        case .thirdParty(let id): "thirdparty:\(id)"
        }
    }
}
