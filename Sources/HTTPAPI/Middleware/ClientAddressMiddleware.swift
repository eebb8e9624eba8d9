import Foundation
import HTTPTypes
import Hummingbird

/// Behind a load balancer every connection comes from the balancer: with `TRUST_PROXY_HEADERS`
/// set, the client's address is the last entry of `X-Forwarded-For` (the one the balancer
/// appended; earlier entries are whatever the client sent, so never trusted).
struct ClientAddressMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    let trustForwardedFor: Bool

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard trustForwardedFor, let forwarded = request.headers[values: .xForwardedFor].last,
            let last = forwarded.split(separator: ",").last?.trimmingCharacters(in: .whitespaces), !last.isEmpty
        else { return try await next(request, context) }
        var context = context
        context.clientAddress = last
        return try await next(request, context)
    }
}

extension HTTPField.Name {
    static let xForwardedFor = Self("X-Forwarded-For")!
}
