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
/// Messages are JSON text frames (`LiveJSON`): the snapshot first, then updates with the runners
/// whose state or rank changed, batched per `LIVE_UPDATE_INTERVAL_MS`. The server pings every
/// 30 s. A spectator that reads slowly gets the latest state of each runner, not a backlog.
struct RunLiveSocket {
    let hub: LiveRunHub
    /// Connections being served, for `/metrics`.
    let open: InFlightCount

    func addRoutes(to router: Router<LiveSocketContext>) {
        router.ws(
            "api/runs/{runId}/live",
            shouldUpgrade: { _, context in
                context.parameters.get("runId", as: UUID.self) == nil ? .dontUpgrade : .upgrade([:])
            },
            onUpgrade: { inbound, outbound, context in
                guard let runId = context.requestContext.parameters.get("runId", as: UUID.self) else { return }
                open.enter()
                defer { open.leave() }
                let writer = LiveFrameWriter(channel: context.requestContext.channel)
                let subscription: LiveRunHub.Subscription
                do {
                    subscription = try await hub.subscribe(to: runId, wake: writer.wake)
                } catch RunEventError.refused(.notFound) {
                    try await outbound.write(.text(#"{"type":"error","detail":"No such run event."}"#))
                    return  // returning closes the socket
                }
                writer.start(subscription)
                defer { hub.unsubscribe(subscription) }
                for try await _ in inbound {}  // the spectator says nothing; this ends when they leave
            })
    }

    /// The same path over plain HTTP (no upgrade asked for): 426, saying how to connect.
    func addPlainRoute(to router: some RouterMethods<AppRequestContext>) {
        router.get("api/runs/{runId}/live") { _, context -> Response in
            guard context.parameters.get("runId", as: UUID.self) != nil else { throw RunEventError.notFound }
            throw Problem(
                .upgradeRequired, slug: "websocket-required", title: "WebSocket required",
                detail: "Connect with a WebSocket client (Upgrade: websocket) to watch the event live.", headers: [.upgrade: "websocket"]
            )
        }
    }
}

/// Writes one spectator's messages from its connection's event loop.
///
/// Thousands of spectators take the same message after every batch; doing it where the socket
/// lives costs one hop per spectator and batch, where a task per spectator writing through the
/// WebSocket handler costs three (the task, the handler, the event loop). The frames go down the
/// same pipeline as the handler's own (pings, close), in order, since both are written on the
/// event loop. Each message is taken when the previous one has been written to the socket, so
/// the kernel's socket buffer is the only queue, and what waits meanwhile is each runner's latest
/// state in the hub.
final class LiveFrameWriter: Sendable {
    private let channel: any Channel
    /// Confined to the event loop: the subscription once started, and whether a write is in flight.
    private let state: NIOLoopBoundBox<(subscription: LiveRunHub.Subscription?, writing: Bool)>

    init(channel: any Channel) {
        self.channel = channel
        state = .makeBoxSendingValue((nil, false), eventLoop: channel.eventLoop)
    }

    /// Called by the hub when there is something new to take.
    @Sendable func wake() {
        channel.eventLoop.execute { self.writeNext() }
    }

    func start(_ subscription: LiveRunHub.Subscription) {
        channel.eventLoop.execute {
            self.state.value.subscription = subscription
            self.writeNext()
        }
    }

    private func writeNext() {
        guard !state.value.writing, let message = state.value.subscription?.next() else { return }
        state.value.writing = true
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: message)).whenComplete { result in
            self.state.value.writing = false
            if case .success = result { self.writeNext() }  // a failed write: the connection is closing
        }
    }
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

/// The live view's JSON text frames: `{ "type": "snapshot", "run": {…}, "runners": [state…] }`
/// first, then `{ "type": "update", "runners": [state…], "ranks": [{ "runnerId", "rank" }…] }`
/// (`ranks`: runners whose rank alone changed). States are encoded once by the hub;
/// the envelopes are put around the shared bytes.
struct LiveJSON: LiveWireFormat {
    func state(_ state: RunnerState) -> ByteBuffer {
        Self.encode(RunnerStateBody(state))
    }

    func snapshot(event: RunEvent, runners: [ByteBuffer]) -> ByteBuffer {
        var message = ByteBuffer(string: #"{"type":"snapshot","run":"#)
        var run = Self.encode(LiveRunBody(event))
        message.writeBuffer(&run)
        message.writeString(#","runners":"#)
        Self.writeArray(runners, to: &message)
        message.writeString("}")
        return message
    }

    func rank(_ state: RunnerState) -> ByteBuffer {
        Self.encode(RankBody(runnerId: state.runnerId.wireString, rank: state.rank))
    }

    func update(runners: [ByteBuffer], ranks: [ByteBuffer]) -> ByteBuffer {
        var message = ByteBuffer(string: #"{"type":"update","runners":"#)
        Self.writeArray(runners, to: &message)
        message.writeString(#","ranks":"#)
        Self.writeArray(ranks, to: &message)
        message.writeString("}")
        return message
    }

    /// `{ "runnerId", "rank" }`: a runner whose rank alone changed.
    private struct RankBody: Encodable {
        let runnerId: String
        let rank: Int?
    }

    private static func writeArray(_ elements: [ByteBuffer], to message: inout ByteBuffer) {
        message.reserveCapacity(minimumWritableBytes: elements.reduce(2) { $0 + $1.readableBytes + 1 })
        message.writeString("[")
        for (index, element) in elements.enumerated() {
            if index > 0 { message.writeString(",") }
            message.writeImmutableBuffer(element)
        }
        message.writeString("]")
    }

    private static func encode(_ value: some Encodable) -> ByteBuffer {
        // These bodies hold strings, numbers and booleans only: encoding them cannot fail.
        ByteBuffer(bytes: (try? WireFormat.encoder().encode(value)) ?? Data("null".utf8))
    }
}

/// What a spectator's page needs to know of the event.
struct LiveRunBody: Encodable {
    let id: String
    let name: String
    let status: String
    let startsAt: String
    let endsAt: String
    let lengthMeters: Double
    let path: RunEventBody.Path

    init(_ event: RunEvent) {
        id = event.id.wireString
        name = event.name
        status = event.phase.rawValue
        startsAt = WireFormat.timestamp(event.startsAt)
        endsAt = WireFormat.timestamp(event.endsAt)
        lengthMeters = (event.path.lengthMeters * 10).rounded() / 10
        path = RunEventBody.Path(coordinates: event.path.coordinates)
    }
}
