import Hummingbird
import Logging

/// A portal page that fails shows an HTML page, not the API's problem+json: the same problem
/// (status, title, detail) in the portal's layout, with a way back. Errors a page handles itself
/// (form problems beside their fields) never get here.
struct PortalErrorMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    let site: PortalSite

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let problem = ErrorMapping.problem(for: error, logger: context.logger)
            var response = site.pages.page(
                "portal-error", title: problem.title, csrf: context.csrfToken ?? "",
                values: site.headerValues.merging(["problem": problem.detail, "back": site.base]) { $1 },
                status: HTTPResponse.Status(code: problem.status)
            )
            for field in problem.headers { response.headers.append(field) }
            return response
        }
    }
}
