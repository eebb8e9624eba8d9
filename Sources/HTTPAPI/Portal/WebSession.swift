import AccessManager
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Browser sessions of the two portals (`/portal` for organisations, `/me` for individuals).
///
/// The session is a login token like the API's — stored hashed on the server, expiring,
/// revocable (logout, or `DELETE …/tokens/{id}` from anywhere) — carried in an `HttpOnly`,
/// `SameSite=Lax` cookie scoped to its portal's path (`Secure` when the request came over TLS).
/// Every form carries a CSRF token: for a signed-in page, a hash of the session token (a page
/// of another site can read neither); for the sign-in and sign-up forms, a random value that
/// must match a cookie of its own (double submit). A POST without the right token is refused.
enum WebSession {
    /// The form field every portal form carries.
    static let csrfField = "csrf"
    /// The cookie of the pre-session forms' token.
    static let anonymousCSRFCookie = "d4h_csrf"

    static func cookieName(_ surface: Surface) -> String {
        surface == .thirdParty ? "d4h_portal" : "d4h_me"
    }

    static func path(_ surface: Surface) -> String {
        surface == .thirdParty ? "/portal" : "/me"
    }

    /// The form token of a session: SHA-256 of the session token under a fixed label, base64url.
    static func csrfToken(session token: String) -> String {
        Self.base64URL(Data(SHA256.hash(data: Data("data4help-csrf:\(token)".utf8))))
    }

    /// A fresh random form token for the pre-session forms.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return Self.base64URL(Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }))
    }

    /// Whether the browser reached us over TLS (directly or through a proxy saying so).
    static func isSecure(_ request: Request) -> Bool {
        request.uri.scheme?.rawValue == "https" || request.headers[.init("X-Forwarded-Proto")!]?.lowercased() == "https"
    }

    static func sessionCookie(_ surface: Surface, token: String, expires: Date, request: Request) -> Cookie {
        Cookie(
            name: cookieName(surface), value: token, expires: expires, path: path(surface),
            secure: isSecure(request), httpOnly: true, sameSite: .lax
        )
    }

    static func clearedSessionCookie(_ surface: Surface, request: Request) -> Cookie {
        Cookie(name: cookieName(surface), value: "", maxAge: 0, path: path(surface), secure: isSecure(request), httpOnly: true, sameSite: .lax)
    }

    static func anonymousCSRFCookie(_ token: String, request: Request) -> Cookie {
        Cookie(name: anonymousCSRFCookie, value: token, maxAge: 7_200, path: "/", secure: isSecure(request), httpOnly: true, sameSite: .lax)
    }

    /// Compares in time independent of where the two differ.
    static func same(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }

    private static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(
            of: "=", with: "")
    }
}

/// Signs a portal page's request in from its session cookie. Without a live session, a page
/// redirects to the portal's sign-in (303, remembering where it was going) rather than
/// answering 401: a browser is asking. A form post must carry the session's CSRF token (in the
/// form, or in `X-CSRF-Token` when a page's script posts a file).
struct WebSessionMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    let authenticator: Authenticator
    let surface: Surface
    let maxBodyBytes: Int

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // Only a login token opens a portal: an API key placed in the cookie does not.
        guard let token = request.cookies[WebSession.cookieName(surface)]?.value, !token.isEmpty,
            let principal = try? await authenticator.authenticate(bearer: token, on: surface),
            case .accessToken = principal.credential
        else {
            return PortalForm.redirect(to: WebSession.path(surface) + "/login", clearing: WebSession.clearedSessionCookie(surface, request: request))
        }
        var context = context
        context.principal = principal
        context.csrfToken = WebSession.csrfToken(session: token)
        context.logger[metadataKey: "account.id"] = "\(principal.account.loggableId)"
        var request = request
        if request.method != .get, request.method != .head {
            if let sent = request.headers[.csrfToken] {
                // A page's script sending a body that is not a form (a file to import): the token
                // comes in a header, which another site's page cannot set without CORS, which we never allow.
                guard WebSession.same(sent, context.csrfToken!) else { throw PortalForm.csrfRefused }
            } else {
                let form = try await PortalForm(&request, limit: maxBodyBytes)
                guard let sent = form[WebSession.csrfField], WebSession.same(sent, context.csrfToken!) else { throw PortalForm.csrfRefused }
            }
        }
        return try await principal.account.scoped { [request, context] in try await next(request, context) }
    }
}

extension HTTPField.Name {
    /// The session's CSRF token, sent by a page's script with a body that is not a form.
    static var csrfToken: Self { Self("X-CSRF-Token")! }
}
