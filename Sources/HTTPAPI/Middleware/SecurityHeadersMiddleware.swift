import HTTPTypes
import Hummingbird

/// Headers every response carries whatever route answered (errors included):
/// - `X-Content-Type-Options: nosniff`: a browser never second-guesses a declared content type
///   (a JSON body read as HTML, an upload echoed as script);
/// - `Cache-Control: no-store` on every answer to a request that carried credentials (a bearer
///   token or a session cookie) and did not choose its own caching: personal data — a profile,
///   medical notes, granted samples — is not kept by a browser's or a proxy's cache.
struct SecurityHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[.xContentTypeOptions] = "nosniff"
        if response.headers[.cacheControl] == nil, request.headers[.authorization] != nil || request.headers[.cookie] != nil {
            response.headers[.cacheControl] = "no-store"
        }
        return response
    }
}

extension HTTPField.Name {
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
}
