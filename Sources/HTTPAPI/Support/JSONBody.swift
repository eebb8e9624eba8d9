import Foundation
import Hummingbird
import NIOCore
import Logging

/// Reads and decodes a JSON request body, turning each way it can be wrong into the right problem:
/// not JSON → 415/400, too large → 413, JSON of the wrong shape → 422 naming the field.
struct JSONBody {
    /// The largest body accepted, in bytes (`MAX_BODY_BYTES`).
    let limit: Int

    func decode<Value: Decodable>(_ type: Value.Type, from request: Request, context: some RequestContext) async throws -> Value {
        guard let value = try await decodeIfPresent(type, from: request, context: context) else {
            throw Problem.malformedBody("The request needs a JSON body.")
        }
        return value
    }

    /// Like `decode`, but nil when the request has no body at all.
    func decodeIfPresent<Value: Decodable>(_ type: Value.Type, from request: Request, context: some RequestContext) async throws -> Value? {
        guard let buffer = try await bytes(of: request) else { return nil }
        return try decode(type, bytes: buffer)
    }

    /// The body's bytes, after checking it is JSON and within the limit; nil when it is empty.
    func bytes(of request: Request) async throws -> ByteBuffer? {
        if let contentType = request.headers[.contentType], !Self.isJSON(contentType) {
            throw Problem(
                .unsupportedMediaType, slug: "unsupported-media-type", title: "Unsupported media type",
                detail: "Send the body as application/json."
            )
        }
        var request = request
        let buffer = try await request.collectBody(upTo: limit)
        return buffer.readableBytes > 0 ? buffer : nil
    }

    /// Decodes bytes already read, with the same problems as `decode`.
    func decode<Value: Decodable>(_ type: Value.Type, bytes buffer: ByteBuffer) throws -> Value {
        do {
            return try WireFormat.decoder().decode(Value.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw Self.problem(for: error)
        }
    }

    static func isJSON(_ contentType: String) -> Bool {
        let mediaType = contentType.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        return mediaType == "application/json" || (mediaType.hasPrefix("application/") && mediaType.hasSuffix("+json"))
    }

    /// Syntax errors are 400; a well-formed document with a wrong type or value is 422 with the field.
    static func problem(for error: DecodingError) -> Problem {
        switch error {
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            return .malformedBody("The body is not valid JSON.")
        case .dataCorrupted(let context):
            return .invalidField(fieldName(context.codingPath), "has an invalid value")
        case .typeMismatch(let expected, let context):
            return .invalidField(fieldName(context.codingPath), "must be \(describe(expected))")
        case .valueNotFound(let expected, let context):
            return .invalidField(fieldName(context.codingPath), "must be \(describe(expected)), not null")
        case .keyNotFound(let key, let context):
            return .invalidField(fieldName(context.codingPath + [key]), "is required")
        @unknown default:
            return .malformedBody("The body could not be read.")
        }
    }

    /// `contacts[0].phone` from a coding path; `body` for the document itself.
    static func fieldName(_ path: [any CodingKey]) -> String {
        guard !path.isEmpty else { return "body" }
        var name = ""
        for key in path {
            if let index = key.intValue {
                name += "[\(index)]"
            } else {
                name += name.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return name
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type, is Int64.Type, is Int32.Type: "an integer"
        case is Double.Type, is Float.Type: "a number"
        case is [Any].Type: "an array"
        default: "a JSON object"
        }
    }
}
