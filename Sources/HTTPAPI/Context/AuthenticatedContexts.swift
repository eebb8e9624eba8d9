import AccessManager
import Hummingbird
import Logging
import Foundation

/// A request context that can only exist with an authenticated principal of one API surface,
/// so a handler written against it cannot forget to check who is asking.
package protocol AuthenticatedRequestContext: ChildRequestContext<AppRequestContext> {
    static var surface: Surface { get }
    var principal: Principal { get }
}

/// Routes under `/api/users` after authentication: the caller is an individual.
package struct IndividualRequestContext: AuthenticatedRequestContext {
    package static var surface: Surface { .individual }
    package var coreContext: CoreRequestContextStorage
    package let principal: Principal

    package init(context: AppRequestContext) throws {
        guard let principal = context.principal, Self.surface.owns(principal.account) else {
            throw AuthenticationError.missingCredentials
        }
        self.coreContext = context.coreContext
        self.principal = principal
    }

    package var requestDecoder: JSONDecoder { WireFormat.decoder() }
    package var responseEncoder: JSONEncoder { WireFormat.encoder() }
}

/// Routes under `/api/thirdparties` after authentication: the caller is a third party (tenant).
package struct ThirdPartyRequestContext: AuthenticatedRequestContext {
    package static var surface: Surface { .thirdParty }
    package var coreContext: CoreRequestContextStorage
    package let principal: Principal

    package init(context: AppRequestContext) throws {
        guard let principal = context.principal, Self.surface.owns(principal.account) else {
            throw AuthenticationError.missingCredentials
        }
        self.coreContext = context.coreContext
        self.principal = principal
    }

    package var requestDecoder: JSONDecoder { WireFormat.decoder() }
    package var responseEncoder: JSONEncoder { WireFormat.encoder() }
}
