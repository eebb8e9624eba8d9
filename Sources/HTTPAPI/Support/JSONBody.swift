import Data4HelpCore
import Foundation
import Hummingbird
import Logging
import NIOCore

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

    /// The body's bytes, after checking it is JSON, as `collect` reads them; nil when it is empty.
    func bytes(of request: Request) async throws -> ByteBuffer? {
        if let contentType = request.headers[.contentType], !Self.isJSON(contentType) {
            throw Problem(
                .unsupportedMediaType, slug: "unsupported-media-type", title: "Unsupported media type",
                detail: "Send the body as application/json."
            )
        }
        let buffer = try await collect(request)
        return buffer.readableBytes > 0 ? buffer : nil
    }

    /// The body's bytes within the limit, decoded when it came gzip- or deflate-coded
    /// (`ContentCoding`; the limit holds before and after): what every body the API reads goes
    /// through, JSON or a course's file.
    func collect(_ request: Request) async throws -> ByteBuffer {
        guard let coding = ContentCoding(header: request.headers[.contentEncoding]) else {
            throw ContentCoding.refusal(
                accepting: ContentCoding.accepted, detail: "Send the body as it is, or coded as gzip or deflate (Content-Encoding).")
        }
        var request = request
        let buffer = try await request.collectBody(upTo: limit)
        guard buffer.readableBytes > 0 else { return buffer }
        do {
            return try coding.decode(buffer, limit: limit)
        } catch .tooLarge {
            throw Problem.bodyTooLarge("Decoded (Content-Encoding: \(coding)), the request body is larger than this server accepts.")
        } catch .corrupt(let reason) {
            throw Problem.malformedBody("The body \(reason) (Content-Encoding: \(coding)).")
        } catch .noMemory {
            throw Problem(
                .serviceUnavailable, slug: "body-not-decoded", title: "Service unavailable",
                detail: "The server cannot decode the body (Content-Encoding: \(coding)) right now; retry shortly.", headers: [.retryAfter: "2"]
            )
        }
    }

    /// Decodes bytes already read, with the same problems as `decode`.
    func decode<Value: Decodable>(_ type: Value.Type, bytes buffer: ByteBuffer) throws -> Value {
        let data = Data(buffer.readableBytesView)
        do {
            return try WireFormat.decoder().decode(Value.self, from: data)
        } catch let error as DecodingError {
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty, let field = Self.numberThatDoesNotFit(Value.self, in: data) {
                throw Problem.invalidField(field, "must be a whole number in range")
            }
            throw Self.problem(for: error)
        }
    }

    /// Foundation's decoder on Linux reports a number that does not fit its field (`1.5` or
    /// `1e20` for an integer) as "not valid JSON" with no coding path. When the document is valid
    /// JSON, each number that is not a whole number within ±2^53 is replaced by 0 in turn (at
    /// most 64, on this error path only): the one whose replacement lets decoding get past the
    /// error is the field at fault.
    static func numberThatDoesNotFit<Value: Decodable>(_ type: Value.Type, in data: Data) -> String? {
        guard let document = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else { return nil }
        var candidates: [[Any]] = []
        func collect(_ value: Any, _ path: [Any]) {
            guard candidates.count < 64 else { return }
            if let object = value as? [String: Any] {
                for (key, child) in object.sorted(by: { $0.key < $1.key }) { collect(child, path + [key]) }
            } else if let array = value as? [Any] {
                for (index, child) in array.enumerated() { collect(child, path + [index]) }
            } else if let number = value as? NSNumber, !(value is Bool) {
                let double = number.doubleValue
                if double.rounded() != double || abs(double) > 9_007_199_254_740_992 { candidates.append(path) }
            }
        }
        collect(document, [])
        func replacing(_ value: Any, at path: ArraySlice<Any>) -> Any {
            guard let first = path.first else { return 0 }
            if var object = value as? [String: Any], let key = first as? String, let child = object[key] {
                object[key] = replacing(child, at: path.dropFirst())
                return object
            }
            if var array = value as? [Any], let index = first as? Int, array.indices.contains(index) {
                array[index] = replacing(array[index], at: path.dropFirst())
                return array
            }
            return value
        }
        for path in candidates {
            guard let changed = try? JSONSerialization.data(withJSONObject: replacing(document, at: path[...]), options: [.fragmentsAllowed]) else {
                continue
            }
            do {
                _ = try WireFormat.decoder().decode(Value.self, from: changed)
            } catch DecodingError.dataCorrupted(let context) where context.codingPath.isEmpty {
                continue
            } catch {}
            return path.enumerated().reduce("") { name, step in
                if let index = step.element as? Int { return name + "[\(index)]" }
                return name.isEmpty ? "\(step.element)" : name + ".\(step.element)"
            }
        }
        return nil
    }

    static func isJSON(_ contentType: String) -> Bool {
        let mediaType = MediaType.essence(of: contentType)
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
