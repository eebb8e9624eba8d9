import Data4HelpCore
import Foundation
import Hummingbird

/// A portal form post (`application/x-www-form-urlencoded`), read once: the body stays on the
/// request for the handler after the CSRF check has looked at it.
struct PortalForm {
    let text: String

    /// Reads the form body (at most `limit` bytes, not coded) and puts it back on the request.
    init(_ request: inout Request, limit: Int) async throws {
        // A browser never codes a form; one that came coded is refused rather than read as text.
        try ContentCoding.requireIdentity(request.headers, detail: "Send the form as it is (no Content-Encoding).")
        let buffer = try await request.body.collect(upTo: limit)
        request.body = .init(buffer: buffer)
        let text = String(buffer: buffer)
        let contentType = request.headers[.contentType].map(MediaType.essence(of:))
        guard text.isEmpty || contentType == "application/x-www-form-urlencoded" else {
            throw Problem(
                .unsupportedMediaType, slug: "form-expected", title: "Form expected",
                detail: "Portal forms are sent as application/x-www-form-urlencoded.")
        }
        self.init(text: text)
    }

    /// A form from its URL-encoded text.
    init(text: String) {
        self.text = text
        // Read here rather than with Hummingbird's URLEncodedFormDecoder: a browser sends the
        // checkboxes of one name as repeated fields (`types=a&types=b`), which that decoder refuses.
        pairs = text.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            return (parts[0], parts.count > 1 ? parts[1] : "")
        }
    }

    private let pairs: [(name: String, value: String)]

    /// The field's value (the first, if sent more than once).
    subscript(_ name: String) -> String? { pairs.first { $0.name == name }?.value }

    /// Every value of a field sent more than once (checkboxes of one name), in order.
    /// A field's text, trimmed; nil when absent or empty.
    func text(_ name: String) -> String? {
        self[name].flatMap { $0.trimmingCharacters(in: .whitespaces).nonEmpty }
    }

    /// A field as a finite number; nil when empty.
    func number(_ name: String) throws -> Double? {
        guard let raw = text(name) else { return nil }
        guard let value = Double(raw), value.isFinite else { throw Problem.invalidField(name, "must be a number") }
        return value
    }

    /// A field as a whole number, never read through a Double (1e300 or nan would trap); nil when empty.
    func integer(_ name: String) throws -> Int? {
        guard let raw = text(name) else { return nil }
        guard let value = Int(raw) else { throw Problem.invalidField(name, "must be a whole number") }
        return value
    }

    func values(_ name: String) -> [String] {
        pairs.filter { $0.name == name }.map(\.value)
    }

    /// A date field (`YYYY-MM-DD`, as a browser's date input sends it) as the API's instant: the
    /// start of that day in UTC, or its end; anything else goes to the API's validation as typed.
    func instant(_ name: String, endOfDay: Bool) -> String? {
        guard let text = self[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        guard text.wholeMatch(of: /\d{4}-\d{2}-\d{2}/) != nil else { return text }
        return text + (endOfDay ? "T23:59:59Z" : "T00:00:00Z")
    }

    /// The form as one of the API's body types, so that the portal validates exactly as the API
    /// does (fields the type does not know are ignored; a value of the wrong shape is missing).
    func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        do {
            return try URLEncodedFormDecoder().decode(Value.self, from: text)
        } catch {
            throw Problem.malformedBody("The form could not be read.")
        }
    }

    static let csrfRefused = Problem(
        .forbidden, slug: "csrf-token", title: "Form token missing or wrong",
        detail: "This form was not sent from a page of this portal (or the page is too old): reload it and try again."
    )

    /// 303 to `path` (after a form post, or to the sign-in), optionally setting cookies.
    static func redirect(to path: String, setting cookies: Cookie..., clearing cleared: Cookie? = nil) -> Response {
        var response = Response(status: .seeOther, headers: [.location: path, .cacheControl: "no-store"])
        for cookie in cookies { response.setCookie(cookie) }
        if let cleared { response.setCookie(cleared) }
        return response
    }
}
