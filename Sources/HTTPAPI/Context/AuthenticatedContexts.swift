import AccessManager
import Data4HelpCore
import Foundation
import Hummingbird
import NIOCore

/// A request context that can only exist with an authenticated principal of one API surface,
/// so a handler written against it cannot forget to check who is asking: it carries the caller
/// as a typed identity (`IndividualID`, `ThirdPartyID`) that components take.
package protocol AuthenticatedRequestContext: ChildRequestContext<AppRequestContext> {
    static var surface: Surface { get }
    var principal: Principal { get }
    /// Completes when the client's connection closes (see `AppRequestContext`).
    var connectionClosed: EventLoopFuture<Void>? { get }
    /// Throws (401) when the principal is not an account of this surface.
    init(coreContext: CoreRequestContextStorage, principal: Principal, connectionClosed: EventLoopFuture<Void>?) throws
}

extension AuthenticatedRequestContext {
    /// Built by the router group from the parent context; throws (401) without a principal of this surface.
    package init(context: AppRequestContext) throws {
        guard let principal = context.principal else { throw AuthenticationError.missingCredentials }
        try self.init(coreContext: context.coreContext, principal: principal, connectionClosed: context.connectionClosed)
    }

    package var requestDecoder: JSONDecoder { WireFormat.decoder() }
    package var responseEncoder: JSONEncoder { WireFormat.encoder() }
}

/// Routes under `/api/users` after authentication: the caller is an individual.
package struct IndividualRequestContext: AuthenticatedRequestContext {
    package static var surface: Surface { .individual }
    package var coreContext: CoreRequestContextStorage
    package let principal: Principal
    /// The individual asking.
    package let individual: IndividualID
    package let connectionClosed: EventLoopFuture<Void>?

    package init(coreContext: CoreRequestContextStorage, principal: Principal, connectionClosed: EventLoopFuture<Void>?) throws {
        guard let individual = principal.individual else { throw AuthenticationError.missingCredentials }
        self.individual = individual
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
    /// The organisation asking: every read and write is scoped to it.
    package let party: ThirdPartyID
    package let connectionClosed: EventLoopFuture<Void>?

    package init(coreContext: CoreRequestContextStorage, principal: Principal, connectionClosed: EventLoopFuture<Void>?) throws {
        guard let party = principal.thirdParty else { throw AuthenticationError.missingCredentials }
        self.party = party
        self.coreContext = coreContext
        self.principal = principal
        self.connectionClosed = connectionClosed
    }
}
