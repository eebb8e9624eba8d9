import AccessManager
import Data4HelpCore
import Foundation
import Hummingbird
import Logging
import NIOCore

/// The request context of every route: Hummingbird's core storage plus the caller's
/// principal once a `BearerAuthenticationMiddleware` has established it.
package struct AppRequestContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    /// Set by `BearerAuthenticationMiddleware` or `WebSessionMiddleware`; nil on public routes.
    package var principal: Principal?
    /// The form token of a portal page's browser session (`WebSessionMiddleware`).
    package var csrfToken: String?
    /// The client's IP address: the connection's peer, or behind a trusted balancer the address
    /// it forwarded (`ClientAddressMiddleware`). Used for limits, never logged.
    package var clientAddress: String?
    /// Completes when the client's connection closes: a long-lived response (an event stream)
    /// ends then, not at its next write.
    package let connectionClosed: EventLoopFuture<Void>?

    package init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.principal = nil
        self.csrfToken = nil
        self.clientAddress = source.channel.remoteAddress?.ipAddress
        self.connectionClosed = source.channel.closeFuture
    }

    package var requestDecoder: JSONDecoder { WireFormat.decoder() }
    package var responseEncoder: JSONEncoder { WireFormat.encoder() }
}
