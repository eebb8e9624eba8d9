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

/// What a spectator asked for: the protocol's version and, in version 2, whom they follow and
/// how often they want the whole field.
struct LiveOptions {
    var version = 2
    var view = LiveView.wholeField

    init(_ query: Hummingbird.Parameters) throws {
        var fields = FieldValidator()
        version =
            fields.optional("v", query["v"].map(String.init)) { (raw: String) throws(InvalidValue) -> Int in
                guard raw == "1" || raw == "2" else { throw InvalidValue("must be 1 or 2") }
                return raw == "1" ? 1 : 2
            } ?? 2
        let follow = fields.optional("follow", query["follow"].map(String.init)) { (raw: String) throws(InvalidValue) in
            try Self.runners(raw.split(separator: ",", omittingEmptySubsequences: false).map(String.init))
        }
        let every = fields.optional("fieldEveryMs", query["fieldEveryMs"].map(String.init), Self.fieldEvery)
        if version == 1, follow != nil || every != nil {
            fields.fail(follow != nil ? "follow" : "fieldEveryMs", "needs version 2 of the live protocol (leave v out)")
        }
        try fields.finish()
        view = LiveView(follow: follow ?? [], fieldEvery: every ?? nil)
    }

    /// The view a spectator's message asks for (`{"follow":[id…],"fieldEveryMs":n}`, either may
    /// be left out to keep what it was).
    static func view(from text: String, over current: LiveView) throws -> LiveView {
        struct Message: Decodable {
            var follow: [String]?
            var fieldEveryMs: Int?
        }
        guard let message = try? JSONDecoder().decode(Message.self, from: Data(text.utf8)) else {
            throw Problem.malformedBody(#"A message is {"follow":[runnerId…],"fieldEveryMs":n}."#)
        }
        var fields = FieldValidator()
        let follow = fields.optional("follow", message.follow, runners)
        let every = fields.optional("fieldEveryMs", message.fieldEveryMs.map(String.init), fieldEvery)
        try fields.finish()
        return LiveView(follow: follow ?? current.follow, fieldEvery: every ?? current.fieldEvery)
    }

    private static func runners(_ ids: [String]) throws(InvalidValue) -> Set<UUID> {
        guard ids.count <= LiveView.maximumFollowed else { throw InvalidValue("must name at most \(LiveView.maximumFollowed) runners") }
        var set = Set<UUID>()
        for id in ids {
            guard let runner = UUID(uuidString: id) else { throw InvalidValue("must be runner ids separated by commas") }
            set.insert(runner)
        }
        return set
    }

    /// 0: the whole field at every batch; else 100 ms to 60 s.
    private static func fieldEvery(_ raw: String) throws(InvalidValue) -> Duration? {
        guard let milliseconds = Int(raw), milliseconds == 0 || (100...60_000).contains(milliseconds) else {
            throw InvalidValue("must be 0 (every update) or 100 to 60000 milliseconds")
        }
        return milliseconds == 0 ? nil : .milliseconds(milliseconds)
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
/// state in the hub. A field the hub deferred is taken by a timer on the same event loop.
final class LiveFrameWriter: Sendable {
    private let channel: any Channel
    /// Confined to the event loop: the subscription once started, whether a write is in flight,
    /// and whether a timer will take the deferred field.
    private let state: NIOLoopBoundBox<(subscription: LiveRunHub.Subscription?, writing: Bool, timer: Bool)>

    init(channel: any Channel) {
        self.channel = channel
        state = .makeBoxSendingValue((nil, false, false), eventLoop: channel.eventLoop)
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
        guard !state.value.writing, let subscription = state.value.subscription else { return }
        switch subscription.take() {
        case .message(let message):
            state.value.writing = true
            channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: message)).whenComplete { result in
                self.state.value.writing = false
                if case .success = result { self.writeNext() }  // a failed write: the connection is closing
            }
        case .fieldIn(let wait):
            guard !state.value.timer else { return }
            state.value.timer = true
            let milliseconds = wait.components.seconds * 1_000 + wait.components.attoseconds / 1_000_000_000_000_000 + 1
            channel.eventLoop.scheduleTask(in: .milliseconds(milliseconds)) {
                self.state.value.timer = false
                self.writeNext()
            }
        case .nothing:
            return
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

/// Version 1 of the live view (`?v=1`, kept for one release): JSON text frames,
/// `{ "type": "snapshot", "run": {…}, "runners": [state…] }` first, then `{ "type": "update",
/// "runners": [state…], "ranks": [{ "runnerId", "rank" }…] }` (`ranks`: runners whose rank alone
/// changed). States are encoded once by the hub; the envelopes are put around the shared bytes.
struct LiveJSON: LiveWireFormat {
    var stateCarriesRank: Bool { true }
    var stateNamesRunner: Bool { true }

    func state(_ state: RunnerState, index: Int, of event: RunEvent) -> ByteBuffer {
        Self.encode(RunnerStateBody(state))
    }

    func snapshot(event: RunEvent, roster: [UUID], names: [UUID: String], ranked: [RunnerState], runners: [ByteBuffer]) -> ByteBuffer {
        var message = ByteBuffer(string: #"{"type":"snapshot","run":"#)
        var run = Self.encode(LiveRunBody(event))
        message.writeBuffer(&run)
        message.writeString(#","runners":"#)
        Self.writeArray(runners, to: &message)
        message.writeString("}")
        return message
    }

    func rank(_ state: RunnerState, index: Int) -> ByteBuffer {
        Self.encode(RankBody(runnerId: state.runnerId.wireString, rank: state.rank))
    }

    func leaders(_ indices: [Int]) -> ByteBuffer { ByteBuffer() }

    func update(runners: [ByteBuffer], ranks: [ByteBuffer], leaders: ByteBuffer?) -> ByteBuffer {
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

    /// `[a,b,…]` of already encoded elements.
    static func writeArray(_ elements: [ByteBuffer], to message: inout ByteBuffer) {
        message.reserveCapacity(minimumWritableBytes: elements.reduce(2) { $0 + $1.readableBytes + 1 })
        message.writeString("[")
        for (index, element) in elements.enumerated() {
            if index > 0 { message.writeString(",") }
            message.writeImmutableBuffer(element)
        }
        message.writeString("]")
    }

    static func encode(_ value: some Encodable) -> ByteBuffer {
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
