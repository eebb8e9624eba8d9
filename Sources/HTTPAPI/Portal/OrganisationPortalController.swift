import AccessManager
import DatabaseLink
import Foundation
import Hummingbird

/// `/portal`: the organisations' web portal — sign up, sign in and out, API keys.
///
/// Each page calls the same logic-tier services as `/api/thirdparties`, and reads its forms
/// into the API's own body types, so a form is validated exactly as the API validates the same
/// request and shows the API's problem messages.
struct OrganisationPortalController {
    let pages: PortalPages
    let accounts: ThirdPartyAccounts
    let sessions: SessionService
    let keys: APIKeyService
    let authenticator: Authenticator
    let maxBodyBytes: Int

    func addRoutes(to router: some RouterMethods<AppRequestContext>) {
        router.get("portal/signup") { request, _ in
            pages.anonymousPage("portal-signup", title: "Sign up", request: request)
        }
        router.post("portal/signup") { request, context in
            var request = request
            let form = try await PortalForm(&request, limit: maxBodyBytes)
            try PortalPages.checkAnonymousCSRF(form, request)
            do {
                let record = try await accounts.register(try form.decode(ThirdPartyRegistrationBody.self).validated())
                return signedIn(try await sessions.issue(for: .thirdParty(record.id)), request: request)
            } catch {
                let (values, status) = PortalPages.errorValues(error, logger: context.logger)
                return pages.anonymousPage("portal-signup", title: "Sign up", request: request,
                                           values: values.merging(["name": form["name"] ?? "", "email": form["email"] ?? ""]) { $1 }, status: status)
            }
        }
        router.get("portal/login") { request, _ in
            pages.anonymousPage("portal-login", title: "Sign in", request: request)
        }
        router.post("portal/login") { request, context in
            var request = request
            let form = try await PortalForm(&request, limit: maxBodyBytes)
            try PortalPages.checkAnonymousCSRF(form, request)
            do {
                let login = try form.decode(LoginBody.self)
                var fields = FieldValidator()
                let email = fields.required("email", login.email) { (raw: String) throws(InvalidValue) in raw }
                let password = fields.required("password", login.password) { (raw: String) throws(InvalidValue) in raw }
                try fields.finish()
                return signedIn(try await sessions.login(on: .thirdParty, email: email!, password: password!), request: request)
            } catch {
                let (values, status) = PortalPages.errorValues(error, logger: context.logger)
                return pages.anonymousPage("portal-login", title: "Sign in", request: request,
                                           values: values.merging(["email": form["email"] ?? ""]) { $1 }, status: status)
            }
        }

        let portal = router.group("portal")
            .add(middleware: WebSessionMiddleware(authenticator: authenticator, surface: .thirdParty, maxBodyBytes: maxBodyBytes))
        portal.get { _, context in
            try await page("portal-home", title: "Overview", context)
        }
        portal.post("logout") { request, context in
            try await sessions.logout(try Self.principal(context))
            return PortalForm.redirect(to: "/portal/login", clearing: WebSession.clearedSessionCookie(.thirdParty, request: request))
        }
        portal.get("keys") { _, context in
            try await keysPage(context)
        }
        portal.post("keys") { request, context in
            var request = request
            let form = try await PortalForm(&request, limit: maxBodyBytes)
            do {
                let body = try form.decode(APIKeyCreationBody.self)
                var fields = FieldValidator()
                let name = fields.required("name", body.name, APIKeyName.init(parsing:))
                try fields.finish()
                let created = try await keys.create(for: try Self.principal(context), name: name!)
                return try await keysPage(context, values: ["created": ["name": created.record.name, "key": created.key]], status: .created)
            } catch {
                let (values, status) = PortalPages.errorValues(error, logger: context.logger)
                return try await keysPage(context, values: values.merging(["name": form["name"] ?? ""]) { $1 }, status: status)
            }
        }
        portal.post("keys/{keyId}/revoke") { _, context in
            guard let id = context.parameters.get("keyId", as: UUID.self) else { throw APIKeyError.notFound }
            _ = try await keys.revoke(for: try Self.principal(context), publicId: id)
            return PortalForm.redirect(to: "/portal/keys")
        }
    }

    /// Sets the session cookie and goes to the overview.
    private func signedIn(_ issued: IssuedToken, request: Request) -> Response {
        PortalForm.redirect(
            to: "/portal", setting: WebSession.sessionCookie(.thirdParty, token: issued.token, expires: issued.record.expiresAt, request: request)
        )
    }

    private func page(
        _ template: String, title: String, _ context: AppRequestContext, values: [String: Any] = [:], status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let profile = try await accounts.profile(of: try Self.principal(context))
        return pages.page(template, title: title, csrf: context.csrfToken ?? "", values: values.merging(["organisation": profile.name]) { $1 }, status: status)
    }

    private func keysPage(_ context: AppRequestContext, values: [String: Any] = [:], status: HTTPResponse.Status = .ok) async throws -> Response {
        let rows = try await keys.list(for: try Self.principal(context), beforeId: nil, limit: 100)
        let listed: [[String: Any]] = rows.map { key in
            [
                "id": key.publicId.wireString, "name": key.name, "prefix": key.prefix,
                "createdAt": PortalPages.shown(key.createdAt), "lastUsedAt": key.lastUsedAt.map(PortalPages.shown) ?? "never",
                "revoked": key.revokedAt != nil,
            ]
        }
        return try await page("portal-keys", title: "API keys", context, values: values.merging(["keys": listed, "hasKeys": !listed.isEmpty]) { $1 }, status: status)
    }

    private static func principal(_ context: AppRequestContext) throws -> Principal {
        guard let principal = context.principal else { throw AuthenticationError.missingCredentials }
        return principal
    }
}

extension PortalPages {
    /// A time as pages show it: UTC, to the minute.
    static func shown(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day().dateTimeSeparator(.space).time(includingFractionalSeconds: false)) + " UTC"
    }
}
