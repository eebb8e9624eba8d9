import Data4HelpCore
import Foundation
import Hummingbird
import Logging
import Mustache

/// Renders the portals' pages (Mustache templates sharing the `portal-head`/`portal-foot`
/// partials) and shows errors the way the API words them: the problem's detail at the top of
/// the form, each field's message next to that field.
struct PortalPages {
    let library: MustacheLibrary
    /// Leaflet and the tiles, for the pages with a map (the course editor): the templates get
    /// `leaflet` and `map.tileURL`/`map.attribution`, and the pages' CSP lets images come from
    /// the tiles' origin.
    var map = MapAssets()

    /// A page; `values` are the template's, `csrf` the form token of its forms.
    func page(_ template: String, title: String, csrf: String, values: [String: Any] = [:], status: HTTPResponse.Status = .ok) -> Response {
        var all = values
        all["title"] = title
        all["csrf"] = csrf
        all["leaflet"] = map.hasLeaflet
        if let tiles = map.tiles { all["map"] = tiles.templateValues }
        var response = HTML(library.render(all, withTemplate: template) ?? "", imagesFrom: map.tiles?.origin).response
        response.status = status
        response.headers[.cacheControl] = "no-store"  // pages show secrets once, and personal data
        return response
    }

    /// A sign-in or sign-up page: its form token is a fresh random value also set as a cookie.
    /// Never the client's own cookie: a value chosen by someone else (a planted cookie) must not
    /// become a form token, and nothing a client sent is ever echoed into `Set-Cookie`.
    func anonymousPage(
        _ template: String, title: String, request: Request, values: [String: Any] = [:], status: HTTPResponse.Status = .ok
    ) -> Response {
        let token = WebSession.randomToken()
        var response = page(template, title: title, csrf: token, values: values, status: status)
        response.setCookie(WebSession.anonymousCSRFCookie(token, request: request))
        return response
    }

    /// The values that show `error` on a form: `problem` (its detail) and `errors.<field>`.
    static func errorValues(_ error: any Error, logger: Logger) -> (values: [String: Any], status: HTTPResponse.Status) {
        let problem = ErrorMapping.problem(for: error, logger: logger)
        var fields: [String: String] = [:]
        for issue in problem.errors ?? [] { fields[issue.field] = issue.message }
        return (["problem": problem.detail, "errors": fields], HTTPResponse.Status(code: problem.status))
    }

    /// An API body as template values: the page shows exactly what the API would answer.
    static func values(of body: some Encodable) -> Any {
        guard let data = try? WireFormat.encoder().encode(body) else { return [:] as [String: Any] }
        return (try? JSONSerialization.jsonObject(with: data)) ?? [:] as [String: Any]
    }

    /// A pre-session form's token must match its cookie.
    static func checkAnonymousCSRF(_ form: PortalForm, _ request: Request) throws {
        guard let cookie = request.cookies[WebSession.anonymousCSRFCookie]?.value, !cookie.isEmpty,
            let sent = form[WebSession.csrfField], WebSession.same(sent, cookie)
        else { throw PortalForm.csrfRefused }
    }
}

extension String {
    var nonEmpty: String? { isEmpty ? nil : self }
}
