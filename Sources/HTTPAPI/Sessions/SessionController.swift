import AccessManager
import Data4HelpCore
import Foundation
import Hummingbird
import Logging

/// Login, logout and the list of live login tokens: the same on both API surfaces.
struct SessionController<Context: AuthenticatedRequestContext> {
    let sessions: SessionService
    let body: JSONBody

    /// `POST login` (public): JSON `{ email, password }` or HTTP Basic.
    func addLogin(to group: RouterGroup<AppRequestContext>) {
        group.post("login") { request, context in
            try await login(request, context: context)
        }
    }

    /// The authenticated routes: `POST logout`, `GET tokens`, `DELETE tokens/{tokenId}`.
    func addAuthenticated(to group: some RouterMethods<Context>) {
        group.post("logout") { _, context in
            try await sessions.logout(context.principal)
            return Response(status: .noContent)
        }
        group.get("tokens") { request, context -> Page<TokenBody> in
            let pagination = try KeysetPagination(request)
            let rows = try await sessions.liveTokens(of: context.principal.account, beforeId: pagination.beforeId, limit: pagination.limit + 1)
            return pagination.page(rows, id: \.id) { TokenBody($0, current: context.principal.credential == .accessToken(id: $0.id)) }
        }
        group.delete("tokens/{tokenId}") { _, context in
            guard let id = context.parameters.get("tokenId", as: UUID.self),
                try await sessions.revokeToken(of: context.principal.account, publicId: id)
            else { throw Problem.notFound("token") }
            return Response(status: .noContent)
        }
    }

    private func login(_ request: Request, context: AppRequestContext) async throws -> EditedResponse<IssuedTokenBody> {
        let email: String, password: String
        if case .basic(let user, let secret) = AuthorizationHeader(request.headers) {
            (email, password) = (user, secret)
        } else {
            guard let login = try await body.decodeIfPresent(LoginBody.self, from: request, context: context) else {
                throw AuthenticationError.missingLoginCredentials
            }
            (email, password) = try login.validated()
        }
        let issued = try await sessions.login(on: Context.surface, email: email, password: password, from: context.clientAddress)
        return EditedResponse(headers: [.cacheControl: "no-store"], response: IssuedTokenBody(issued))
    }
}

struct LoginBody: Decodable {
    var email: String?
    var password: String?
}

/// A login token as issued: the secret appears here and nowhere else, ever.
struct IssuedTokenBody: ResponseEncodable {
    let token: String
    let tokenType = "Bearer"
    let tokenId: String
    let expiresAt: Date

    init(_ issued: IssuedToken) {
        token = issued.token
        tokenId = issued.record.publicId.wireString
        expiresAt = issued.record.expiresAt
    }
}

/// A live login token as listed: never the secret.
struct TokenBody: Encodable, Sendable {
    let id: String
    let createdAt: Date
    let expiresAt: Date
    let lastUsedAt: Date?
    /// Whether this is the token the listing request was made with.
    let current: Bool

    init(_ record: AccessTokenRecord, current: Bool) {
        id = record.publicId.wireString
        createdAt = record.createdAt
        expiresAt = record.expiresAt
        lastUsedAt = record.lastUsedAt
        self.current = current
    }
}
