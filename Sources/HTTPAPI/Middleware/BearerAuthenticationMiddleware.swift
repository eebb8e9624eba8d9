import AccessManager
import Data4HelpCore
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
        return try await principal.account.scoped { try await next(request, context) }
    }
}

extension AccountReference {
    /// Runs the body with the database scoped to this organisation (`TenantScope`: row-level
    /// security on the tenant tables); an individual's requests run unscoped.
    func scoped<Result>(_ body: () async throws -> Result) async throws -> Result {
        guard case .thirdParty(let id) = self else { return try await body() }
        return try await TenantScope.$thirdPartyId.withValue(id) { try await body() }
    }

    /// `individual:42` / `thirdparty:7`: internal ids, which identify nobody outside the database.
    var loggableId: String {
        switch self {
        case .individual(let id): "individual:\(id)"
        case .thirdParty(let id): "thirdparty:\(id)"
        }
    }
}
