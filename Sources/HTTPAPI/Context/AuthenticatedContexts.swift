import AccessManager
import Foundation
import Hummingbird
import NIOCore

/// A request context that can only exist with an authenticated principal of one API surface,
/// so a handler written against it cannot forget to check who is asking.
package protocol AuthenticatedRequestContext: ChildRequestContext<AppRequestContext> {
    static var surface: Surface { get }
    var principal: Principal { get }
    /// Completes when the client's connection closes (see `AppRequestContext`).
    var connectionClosed: EventLoopFuture<Void>? { get }
    init(coreContext: CoreRequestContextStorage, principal: Principal, connectionClosed: EventLoopFuture<Void>?)
}

extension AuthenticatedRequestContext {
    /// Built by the router group from the parent context; throws (401) without a principal of this surface.
    package init(context: AppRequestContext) throws {
        guard let principal = context.principal, Self.surface.owns(principal.account) else {
            throw AuthenticationError.missingCredentials
        }
        self.init(coreContext: context.coreContext, principal: principal, connectionClosed: context.connectionClosed)
    }

    package var requestDecoder: JSONDecoder { WireFormat.decoder() }
    package var responseEncoder: JSONEncoder { WireFormat.encoder() }
}

/// Routes under `/api/users` after authentication: the caller is an individual.
package struct IndividualRequestContext: AuthenticatedRequestContext {
    package static var surface: Surface { .individual }
    package var coreContext: CoreRequestContextStorage
    package let principal: Principal
    package let connectionClosed: EventLoopFuture<Void>?

    package init(coreContext: CoreRequestContextStorage, principal: Principal, connectionClosed: EventLoopFuture<Void>?) {
        self.coreContext = coreContext
        self.principal = principal
        self.connectionClosed = connectionClosed
    }
}

/// Routes under `/api/thirdparties` after authentication: the caller is a third party (tenant).
package struct ThirdPartyRequestContext: AuthenticatedRequestContext {
    package static var surface: Surface { .thirdParty }
    package var coreContext: CoreRequestContextStorage
    package let principal: Principal
    package let connectionClosed: EventLoopFuture<Void>?

    package init(coreContext: CoreRequestContextStorage, principal: Principal, connectionClosed: EventLoopFuture<Void>?) {
        self.coreContext = coreContext
        self.principal = principal
        self.connectionClosed = connectionClosed
    }
}
