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
        let id = request.headers[Self.headerName].flatMap(Self.acceptable) ?? UUID().uuidString.lowercased()
        var context = context
        context.logger[metadataKey: Self.metadataKey] = "\(id)"
        var response = try await next(request, context)
        response.headers[Self.headerName] = id
        return response
    }

    /// 1–128 characters of letters, digits and `-_.:`; anything else could forge log lines.
    private static func acceptable(_ candidate: String) -> String? {
        guard (1...128).contains(candidate.count),
            candidate.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.:".contains($0)) })
        else { return nil }
        return candidate
    }
}
