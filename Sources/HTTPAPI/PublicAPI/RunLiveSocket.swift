import DatabaseLink
import Foundation
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

    func addRoutes(to router: Router<BasicWebSocketRequestContext>) {
        router.ws("api/runs/{runId}/live", shouldUpgrade: { _, context in
            context.parameters.get("runId", as: UUID.self) == nil ? .dontUpgrade : .upgrade([:])
        }, onUpgrade: { inbound, outbound, context in
            guard let runId = context.requestContext.parameters.get("runId", as: UUID.self) else { return }
            let subscription: LiveRunHub.Subscription
            do {
                subscription = try await hub.subscribe(to: runId)
            } catch RunEventError.refused(.notFound) {
                try await outbound.write(.text(#"{"type":"error","detail":"No such run event."}"#))
                return   // returning closes the socket
            }
            defer { hub.unsubscribe(subscription) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await _ in inbound {}   // the spectator says nothing; this ends when they leave
                }
                group.addTask {
                    // Each message is taken when the previous one is written: the socket's own
                    // buffer is the only queue, and what waits meanwhile is each runner's latest state.
                    for await message in subscription.messages {
                        try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .text, data: message)))
                    }
                }
                try await group.next()
                group.cancelAll()
            }
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

/// The live view's JSON text frames: `{ "type": "snapshot", "run": {…}, "runners": [state…] }`
/// first, then `{ "type": "update", "runners": [state…] }`. States are encoded once by the hub;
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

    func update(runners: [ByteBuffer]) -> ByteBuffer {
        var message = ByteBuffer(string: #"{"type":"update","runners":"#)
        Self.writeArray(runners, to: &message)
        message.writeString("}")
        return message
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
