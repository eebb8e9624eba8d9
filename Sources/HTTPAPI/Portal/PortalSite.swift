import AccessManager
import Data4HelpCore
import Foundation
import Hummingbird

/// One of the two web portals: `/portal` for organisations (`.thirdParty`), `/me` for
/// individuals. Sign-in and sign-out, the signed-in group of pages behind `WebSessionMiddleware`,
/// errors shown as pages (`PortalErrorMiddleware`), and how a page is rendered and a form handled; the pages themselves are in `Portal*Pages`
/// (organisations) and `Me*Pages` (individuals).
///
/// Every page calls the same logic-tier services as the API, and reads its forms into the API's
/// own body types, so a form is validated exactly as the API validates the same request and
/// shows the API's problem messages.
struct PortalSite {
    let surface: Surface
    let pages: PortalPages
    /// What every portal page needs: signing in and out, confirming a registration, the
    /// signed-in account's name for the header.
    let accounts: PortalAccounts
    let maxBodyBytes: Int
    /// Webhook URLs (SOS contacts) may point into private networks (`WEBHOOK_ALLOW_PRIVATE_NETWORKS`).
    var allowPrivateWebhooks = false
    /// The API's per-credential limiter: a signed-in page spends from the same bucket as the
    /// session's token would on the API (a 429 page with `Retry-After` once it is empty).
    let rateLimiter: RateLimiter

    var base: String { WebSession.path(surface) }

    /// The portal's two groups of routes, both showing errors as HTML pages: `open` (sign-in,
    /// and sign-up where there is one) and `signedIn` (behind the session; sign-out is added here).
    func routes(on router: some RouterMethods<AppRequestContext>) -> (open: RouterGroup<AppRequestContext>, signedIn: RouterGroup<AppRequestContext>)
    {
        let open = router.group(RouterPath(String(base.dropFirst()))).add(middleware: PortalErrorMiddleware(site: self))
        open.get("login") { request, _ in
            pages.anonymousPage("portal-login", title: "Sign in", request: request, values: headerValues)
        }
        open.post("login") { request, context in
            var request = request
            let form = try await PortalForm(&request, limit: maxBodyBytes)
            try PortalPages.checkAnonymousCSRF(form, request)
            do {
                let (email, password) = try form.decode(LoginBody.self).validated()
                return signedIn(
                    try await accounts.sessions.login(on: surface, email: email, password: password, from: context.clientAddress), request: request)
            } catch {
                let (values, status) = PortalPages.errorValues(error, logger: context.logger)
                return pages.anonymousPage(
                    "portal-login", title: "Sign in", request: request,
                    values: values.merging(headerValues) { $1 }.merging(["email": form["email"] ?? ""]) { $1 }, status: status)
            }
        }
        // The link in a confirmation message opens a page with a button: confirming is a POST, so a
        // mail scanner that fetches every link creates nothing.
        open.get("confirm") { request, _ in
            pages.anonymousPage(
                "portal-confirm", title: "Confirm your account", request: request,
                values: headerValues.merging(["token": request.uri.queryParameters.get("token") ?? ""]) { $1 })
        }
        open.post("confirm") { request, context in
            var request = request
            let form = try await PortalForm(&request, limit: maxBodyBytes)
            try PortalPages.checkAnonymousCSRF(form, request)
            do {
                let token = try ConfirmationBody(token: form["token"]).validated()
                let account: AccountReference =
                    surface == .thirdParty
                    ? .thirdParty(try await accounts.registrations.confirmThirdParty(token: token).id)
                    : .individual(try await accounts.registrations.confirmIndividual(token: token).id)
                return signedIn(try await accounts.sessions.issue(for: account), request: request)
            } catch {
                let (values, status) = PortalPages.errorValues(error, logger: context.logger)
                return pages.anonymousPage(
                    "portal-confirm", title: "Confirm your account", request: request,
                    values: values.merging(headerValues) { $1 }.merging(["token": form["token"] ?? ""]) { $1 }, status: status)
            }
        }
        let session = open.group()
            .add(middleware: WebSessionMiddleware(authenticator: accounts.authenticator, surface: surface, maxBodyBytes: maxBodyBytes))
            .add(middleware: RateLimitMiddleware(limiter: rateLimiter))
        session.post("logout") { request, context in
            try await accounts.sessions.logout(try context.signedIn())
            return PortalForm.redirect(to: "\(base)/login", clearing: WebSession.clearedSessionCookie(surface, request: request))
        }
        return (open, session)
    }

    /// Sets the session cookie and goes to the portal's first page.
    func signedIn(_ issued: IssuedToken, request: Request) -> Response {
        PortalForm.redirect(
            to: base, setting: WebSession.sessionCookie(surface, token: issued.token, expires: issued.record.expiresAt, request: request))
    }

    /// What the shared header needs: the portal's name, its links, where to sign in.
    var headerValues: [String: Any] {
        let links: [(String, String)] =
            surface == .thirdParty
            ? [
                ("", "Overview"), ("/keys", "API keys"), ("/requests", "Access requests"), ("/aggregates", "Aggregates"), ("/webhook", "Webhook"),
                ("/offers", "Offers"), ("/profile", "Public profile"),
            ]
            : [
                ("", "Requests"), ("/access-log", "Access log"), ("/health", "My data"), ("/workouts", "Workouts"),
                ("/insights", "Heart and training"), ("/imports", "Import"),
                ("/rules", "Watch rules"), ("/alerts", "Alerts"), ("/carers", "Carers"), ("/caring", "Caring"), ("/sos", "AutomatedSOS"),
                ("/runs", "Run events"), ("/offers", "Offer data"), ("/shares", "Share links"), ("/privacy", "Privacy record"),
            ]
        return [
            "base": base,
            "brand": surface == .thirdParty ? "Data4Help for organisations" : "Data4Help — my data",
            "nav": links.map { ["href": base + $0.0, "label": $0.1] },
            "signUp": surface == .thirdParty,
        ]
    }

    /// A signed-in page: the account's name in the header, the session's form token in every form.
    func page(
        _ template: String, title: String, _ context: AppRequestContext, values: [String: Any] = [:], status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let name =
            surface == .thirdParty
            ? try await accounts.thirdParties.profile(of: try context.signedInParty()).name
            : try await accounts.individuals.profile(of: try context.signedInIndividual()).fullName
        return pages.page(
            template, title: title, csrf: context.csrfToken ?? "", values: values.merging(headerValues) { $1 }.merging(["account": name]) { $1 },
            status: status)
    }

    /// A page of a portal, given the values to show besides its own (a form's problems) and the status.
    typealias Page = (AppRequestContext, [String: Any], HTTPResponse.Status) async throws -> Response

    /// Runs a form's action; an error shows `page` again with the problem beside its fields and,
    /// as `typed`, what was typed in the fields named in `keeping` (never a password).
    func submit(
        _ request: Request, _ context: AppRequestContext, keeping fields: [String] = [], showing page: Page,
        _ action: (PortalForm) async throws -> Response
    ) async throws -> Response {
        var request = request
        let form = try await PortalForm(&request, limit: maxBodyBytes)
        do {
            return try await action(form)
        } catch {
            var (values, status) = PortalPages.errorValues(error, logger: context.logger)
            if !fields.isEmpty { values["typed"] = Dictionary(uniqueKeysWithValues: fields.map { ($0, form[$0] ?? "") }) }
            return try await page(context, values, status)
        }
    }
}

extension AppRequestContext {
    /// The principal `WebSessionMiddleware` signed in.
    func signedIn() throws -> Principal {
        guard let principal else { throw AuthenticationError.missingCredentials }
        return principal
    }

    /// The individual signed in to `/me`.
    func signedInIndividual() throws -> IndividualID {
        guard let individual = try signedIn().individual else { throw AuthenticationError.missingCredentials }
        return individual
    }

    /// The organisation signed in to `/portal`.
    func signedInParty() throws -> ThirdPartyID {
        guard let party = try signedIn().thirdParty else { throw AuthenticationError.missingCredentials }
        return party
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
        date.formatted(Date.ISO8601FormatStyle(timeZone: .gmt).year().month().day().dateTimeSeparator(.space).time(includingFractionalSeconds: false))
            + " UTC"
    }
}
