import Foundation
import HTTPTypes
import OpenAPIRuntime
import ZlibCoding

/// Sends JSON request bodies gzip-coded (`Content-Encoding: gzip`, which the server decodes for
/// every JSON body): a sync engine's upload of 1 Hz heart rate is about a fifth of its size that
/// way (26.6 bytes a reading against 128.0 as JSON, `Data4HelpKitTests`; most of what is left is
/// the items' ids, which no coding shrinks), what a phone on a mobile network pays for.
///
/// What goes as it is: a body under `minimumBytes` (a sign-in's few hundred bytes gain nothing),
/// one of another type (an import's file is streamed to the server as it is, and a zip is
/// compressed already), one of unknown length or over `maximumBytes` (never held twice in
/// memory), one that coding would not make smaller, and one already coded.
///
/// A server or proxy that answers a coded body with `415` (RFC 7694: it does not decode that
/// coding; ours then lists what it does in `Accept-Encoding`) gets the same body again uncoded,
/// and that operation's bodies go uncoded from then on, for this client.
struct RequestCompression: ClientMiddleware {
    var minimumBytes = 1024
    var maximumBytes = 32 << 20
    /// The operations whose coded bodies were refused.
    let refused = RefusedOperations()

    /// An actor rather than a lock: `Mutex` needs iOS 18, and the kit's apps may be older.
    actor RefusedOperations {
        private var ids: Set<String> = []
        func contains(_ id: String) -> Bool { ids.contains(id) }
        func insert(_ id: String) { ids.insert(id) }
    }

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard let body, case .known(let length) = body.length, length >= minimumBytes, length <= maximumBytes,
            request.headerFields[.contentEncoding] == nil, Self.isJSON(request.headerFields[.contentType]),
            await !refused.contains(operationID)
        else {
            return try await next(request, body, baseURL)
        }
        let plain = try await [UInt8](collecting: body, upTo: maximumBytes)
        guard let coded = ZlibDeflate.compress(plain, format: .gzip), coded.count < plain.count else {
            return try await next(request, HTTPBody(plain), baseURL)
        }
        var codedRequest = request
        codedRequest.headerFields[.contentEncoding] = "gzip"
        let (response, responseBody) = try await next(codedRequest, HTTPBody(coded), baseURL)
        guard response.status == .unsupportedMediaType, !Self.listsGzip(response.headerFields[.acceptEncoding]) else {
            return (response, responseBody)
        }
        await refused.insert(operationID)
        if let responseBody { _ = try? await [UInt8](collecting: responseBody, upTo: 1 << 20) }  // the connection's to reuse
        return try await next(request, HTTPBody(plain), baseURL)
    }

    /// `application/json` or a `+json` type, with any parameters.
    static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let essence = contentType.split(separator: ";", maxSplits: 1).first?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        return essence == "application/json" || (essence.hasPrefix("application/") && essence.hasSuffix("+json"))
    }

    /// Whether an `Accept-Encoding` list takes gzip (a `415` that says so refused something else).
    static func listsGzip(_ header: String?) -> Bool {
        (header ?? "").split(separator: ",").contains { element in
            let parts = element.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            let weight = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            return ["gzip", "x-gzip", "*"].contains(parts.first ?? "") && weight > 0
        }
    }
}
