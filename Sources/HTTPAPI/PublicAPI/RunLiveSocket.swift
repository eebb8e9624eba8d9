import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import RunEvents

/// `GET /api/runs/{runId}/live` (WebSocket, no account): a snapshot of every runner, then
/// updates as runners post — from whichever instance they post to (`LiveRunHub`).
///
/// Version 2 (`LiveCompact`, the default) or, with `?v=1`, version 1 (`LiveJSON`, kept for one
/// release): the snapshot first, then updates with the runners whose state or rank changed,
/// batched per `LIVE_UPDATE_INTERVAL_MS`. A version 2 spectator may follow runners
/// (`?follow=id,id`, at most 50) and take the rest of the field less often (`?fieldEveryMs=1000`),
/// or say so later in a text message `{"follow":[id…],"fieldEveryMs":n}` (answered by a new
/// snapshot). The server pings every 30 s. A spectator that reads slowly gets the latest state of
/// each runner, not a backlog.
struct RunLiveSocket {
    /// Version 2's hub, and version 1's: each renders its own format once per change; both hear
    /// every announcement.
    let hub: LiveRunHub
    let hubV1: LiveRunHub
    /// Connections being served, for `/metrics`.
    let open: InFlightCount

    func addRoutes(to router: Router<LiveSocketContext>) {
        router.ws(
            "api/runs/{runId}/live",
            shouldUpgrade: { request, context in
                context.parameters.get("runId", as: UUID.self) == nil || (try? LiveOptions(request.uri.queryParameters)) == nil
                    ? .dontUpgrade : .upgrade([:])
            },
            onUpgrade: { inbound, outbound, context in
                guard let runId = context.requestContext.parameters.get("runId", as: UUID.self),
                    let options = try? LiveOptions(context.request.uri.queryParameters)
                else { return }
                open.enter()
                defer { open.leave() }
                let writer = LiveFrameWriter(channel: context.requestContext.channel)
                let hub = options.version == 1 ? hubV1 : hub
                let subscription: LiveRunHub.Subscription
                do {
                    subscription = try await hub.subscribe(to: runId, view: options.view, wake: writer.wake)
                } catch RunEventError.refused(.notFound) {
                    try await outbound.write(.text(#"{"type":"error","detail":"No such run event."}"#))
                    return  // returning closes the socket
                }
                writer.start(subscription)
                defer { hub.unsubscribe(subscription) }
                // This ends when the spectator leaves. Version 1 spectators say nothing that is read.
                for try await message in inbound.messages(maxSize: 16_384) {
                    guard options.version == 2, case .text(let text) = message else { continue }
                    do {
                        subscription.change(to: try LiveOptions.view(from: text, over: options.view))
                    } catch let problem as Problem {
                        let issue = problem.errors?.first
                        try await outbound.write(
                            .text(
                                String(
                                    decoding: LiveJSON.encode(LiveErrorBody(detail: issue?.message ?? problem.detail, field: issue?.field))
                                        .readableBytesView, as: UTF8.self)))
                    }
                }
            })
    }

    /// The same path over plain HTTP (no upgrade asked for, or a query refused): 426 saying how
    /// to connect, or 422 naming the query's field.
    func addPlainRoute(to router: some RouterMethods<AppRequestContext>) {
        router.get("api/runs/{runId}/live") { request, context -> Response in
            guard context.parameters.get("runId", as: UUID.self) != nil else { throw RunEventError.notFound }
            _ = try LiveOptions(request.uri.queryParameters)
            throw Problem(
                .upgradeRequired, slug: "websocket-required", title: "WebSocket required",
                detail: "Connect with a WebSocket client (Upgrade: websocket) to watch the event live.", headers: [.upgrade: "websocket"]
            )
        }
    }
}

/// `{"type":"error","detail":…,"field":…}`: a spectator's message that was refused (the connection stays).
private struct LiveErrorBody: Encodable {
    let type = "error"
    let detail: String
    let field: String?
}

/// The request context of WebSocket routes: Hummingbird's basic one, plus the connection's
/// channel (for `LiveFrameWriter`).
struct LiveSocketContext: RequestContext, WebSocketRequestContext {
    var coreContext: CoreRequestContextStorage
    let webSocket: WebSocketHandlerReference<Self>
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
        channel = source.channel
    }
}
