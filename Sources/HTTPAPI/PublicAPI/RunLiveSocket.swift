import DatabaseLink
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import RunEvents

/// `GET /api/runs/{runId}/live` (WebSocket, no account): a snapshot of every runner, then
/// updates as runners post — from whichever instance they post to (`LiveRunHub`).
///
/// Messages are JSON text frames: `{ "type": "snapshot", "run": {…}, "runners": [state…] }`
/// first, then `{ "type": "update", "runners": [state…] }` with the runners whose state or rank
/// changed. The server pings every 30 s. A spectator that reads slowly gets the latest state of
/// each runner, not a backlog.
struct RunLiveSocket {
    let live: LivePositions
    let hub: LiveRunHub

    func addRoutes(to router: Router<BasicWebSocketRequestContext>) {
        router.ws("api/runs/{runId}/live", shouldUpgrade: { _, context in
            context.parameters.get("runId", as: UUID.self) == nil ? .dontUpgrade : .upgrade([:])
        }, onUpgrade: { inbound, outbound, context in
            guard let runId = context.requestContext.parameters.get("runId", as: UUID.self) else { return }
            let subscription = hub.subscribe(to: runId)   // before the snapshot: nothing falls between
            defer { hub.unsubscribe(subscription) }
            let snapshot: LiveBoard
            do {
                snapshot = try await live.snapshot(of: runId)
            } catch RunEventError.refused(.notFound) {
                try await outbound.write(.text(#"{"type":"error","detail":"No such run event."}"#))
                return   // returning closes the socket
            }
            try await outbound.write(.text(try Self.message(LiveMessage(
                type: "snapshot", run: LiveRunBody(snapshot.event), runners: snapshot.ranked.map(RunnerStateBody.init)
            ))))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await _ in inbound {}   // the spectator says nothing; this ends when they leave
                }
                group.addTask {
                    var board = snapshot
                    for await _ in subscription.wakeups {
                        let changed = board.apply(subscription.take())
                        guard !changed.isEmpty else { continue }
                        try await outbound.write(.text(try Self.message(LiveMessage(type: "update", run: nil, runners: changed.map(RunnerStateBody.init)))))
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

    static func message(_ message: LiveMessage) throws -> String {
        String(decoding: try WireFormat.encoder().encode(message), as: UTF8.self)
    }
}

struct LiveMessage: Encodable {
    let type: String
    let run: LiveRunBody?
    let runners: [RunnerStateBody]
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
