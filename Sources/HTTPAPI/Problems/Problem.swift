import Foundation
import Hummingbird
import Logging

/// An RFC 9457 problem: the body of every error response (`application/problem+json`).
///
/// `type` is a `tag:` URI naming the kind of problem (RFC 9457 §3.1.1 allows non-resolvable
/// URIs); `errors` lists the offending fields of a validation problem by their wire names.
package struct Problem: Error, Sendable, Encodable {
    package struct FieldIssue: Sendable, Encodable, Equatable {
        /// The wire name of the field (`fiscalCode`, `contacts[0].phone`; `body` for the whole body).
        package let field: String
        package let message: String

        package init(field: String, message: String) {
            self.field = field
            self.message = message
        }
    }

    package let type: String
    package let title: String
    package let status: Int
    package let detail: String
    package var instance: String?
    package var requestId: String?
    /// The request's trace (when tracing is on), for finding it from a user's report.
    package var traceId: String?
    package let errors: [FieldIssue]?
    /// Response headers the problem requires (`WWW-Authenticate`, `Retry-After`).
    package let headers: HTTPFields

    package init(
        _ status: HTTPResponse.Status, slug: String, title: String, detail: String,
        errors: [FieldIssue]? = nil, headers: HTTPFields = [:]
    ) {
        self.type = "tag:data4help,2026:problem:\(slug)"
        self.title = title
        self.status = status.code
        self.detail = detail
        self.errors = errors
        self.headers = headers
    }

    private enum CodingKeys: String, CodingKey {
        case type, title, status, detail, instance, requestId, traceId, errors
    }

    /// A 422 naming the fields that hold bad values.
    package static func validation(_ issues: [FieldIssue]) -> Problem {
        let names = issues.map(\.field).joined(separator: ", ")
        return Problem(
            .unprocessableContent, slug: "validation-error", title: "Invalid request fields",
            detail: "These fields are missing or hold invalid values: \(names).", errors: issues
        )
    }

    /// A 422 for one field.
    package static func invalidField(_ field: String, _ message: String) -> Problem {
        validation([FieldIssue(field: field, message: message)])
    }

    /// A 400 for a body that is not the JSON it claims to be.
    /// 413: the body (as received, or once decoded) is over the server's limit.
    package static func bodyTooLarge(_ detail: String = "The request body is larger than this server accepts.") -> Problem {
        Problem(.contentTooLarge, slug: "body-too-large", title: "Request body too large", detail: detail)
    }

    package static func malformedBody(_ detail: String) -> Problem {
        Problem(.badRequest, slug: "malformed-body", title: "Malformed request body", detail: detail)
    }

    /// A 404 that says nothing about whether the thing exists for somebody else.
    package static func notFound(_ what: String = "resource") -> Problem {
        Problem(.notFound, slug: "not-found", title: "Not found", detail: "There is no such \(what).")
    }

    /// The response carrying this problem.
    package func response(instance: String?, requestId: String?) -> Response {
        var body = self
        body.instance = instance
        body.requestId = requestId
        body.traceId = TraceIdentity.current
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(body)) ?? Data()
        var headers = self.headers
        headers[.contentType] = "application/problem+json"
        headers[.cacheControl] = "no-store"
        return Response(status: .init(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
