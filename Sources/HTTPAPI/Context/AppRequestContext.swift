import AccessManager
import Hummingbird
import Logging
import Foundation

/// The request context of every route: Hummingbird's core storage plus the caller's
/// principal once a `BearerAuthenticationMiddleware` has established it.
package struct AppRequestContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    /// Set by `BearerAuthenticationMiddleware`; nil on public routes.
    package var principal: Principal?

    package init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.principal = nil
    }

    package var requestDecoder: JSONDecoder { WireFormat.decoder() }
    package var responseEncoder: JSONEncoder { WireFormat.encoder() }
}
