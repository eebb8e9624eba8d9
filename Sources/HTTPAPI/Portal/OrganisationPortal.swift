import AccessManager
import DatabaseLink
import Foundation
import Hummingbird

/// `/portal`: the organisations' web portal — sign up, sign in and out, and the pages of
/// `Portal*Pages` (keys, webhook, …) behind the session.
///
/// Each page calls the same logic-tier services as `/api/thirdparties`, and reads its forms
/// into the API's own body types, so a form is validated exactly as the API validates the same
/// request and shows the API's problem messages.
struct OrganisationPortal {
    let pages: PortalPages
    let components: Components
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
                let record = try await components.thirdParties.register(try form.decode(ThirdPartyRegistrationBody.self).validated())
                return signedIn(try await components.sessions.issue(for: .thirdParty(record.id)), request: request)
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
                let (email, password) = try form.decode(LoginBody.self).validated()
                return signedIn(try await components.sessions.login(on: .thirdParty, email: email, password: password), request: request)
            } catch {
                let (values, status) = PortalPages.errorValues(error, logger: context.logger)
                return pages.anonymousPage("portal-login", title: "Sign in", request: request,
                                           values: values.merging(["email": form["email"] ?? ""]) { $1 }, status: status)
            }
        }

        let portal = router.group("portal")
            .add(middleware: WebSessionMiddleware(authenticator: components.authenticator, surface: .thirdParty, maxBodyBytes: maxBodyBytes))
        portal.get { _, context in
            try await page("portal-home", title: "Overview", context)
        }
        portal.post("logout") { request, context in
            try await components.sessions.logout(try context.signedIn())
            return PortalForm.redirect(to: "/portal/login", clearing: WebSession.clearedSessionCookie(.thirdParty, request: request))
        }
        PortalKeyPages(portal: self).addRoutes(to: portal)
        PortalWebhookPages(portal: self).addRoutes(to: portal)
        PortalRequestPages(portal: self).addRoutes(to: portal)
        PortalAggregatePages(portal: self).addRoutes(to: portal)
    }

    /// Sets the session cookie and goes to the overview.
    private func signedIn(_ issued: IssuedToken, request: Request) -> Response {
        PortalForm.redirect(
            to: "/portal", setting: WebSession.sessionCookie(.thirdParty, token: issued.token, expires: issued.record.expiresAt, request: request)
        )
    }

    /// A signed-in page: the organisation's name in the header, the session's form token in every form.
    func page(
        _ template: String, title: String, _ context: AppRequestContext, values: [String: Any] = [:], status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let profile = try await components.thirdParties.profile(of: try context.signedIn())
        return pages.page(template, title: title, csrf: context.csrfToken ?? "", values: values.merging(["organisation": profile.name]) { $1 }, status: status)
    }

    /// Runs a form's action; an error re-renders the page (`rerender`) with the problem shown.
    func submit(
        _ request: Request, _ context: AppRequestContext, rerender: ([String: Any], HTTPResponse.Status) async throws -> Response,
        _ action: (PortalForm) async throws -> Response
    ) async throws -> Response {
        var request = request
        let form = try await PortalForm(&request, limit: maxBodyBytes)
        do {
            return try await action(form)
        } catch {
            let (values, status) = PortalPages.errorValues(error, logger: context.logger)
            return try await rerender(values, status)
        }
    }
}

extension AppRequestContext {
    /// The principal `WebSessionMiddleware` signed in.
    func signedIn() throws -> Principal {
        guard let principal else { throw AuthenticationError.missingCredentials }
        return principal
    }
}

extension LoginBody {
    /// The email and password, both required (checked by the credentials, not by shape).
    func validated() throws(Problem) -> (email: String, password: String) {
        var fields = FieldValidator()
        let email = fields.required("email", email) { (raw: String) throws(InvalidValue) in raw }
        let password = fields.required("password", password) { (raw: String) throws(InvalidValue) in raw }
        try fields.finish()
        return (email!, password!)
    }
}

extension PortalPages {
    /// A time as pages show it: UTC, to the second.
    static func shown(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day().dateTimeSeparator(.space).time(includingFractionalSeconds: false)) + " UTC"
    }
}
