import AccessManager
import Data4HelpCore
import Foundation
import HTTPTypes
import HealthSharing
import Hummingbird
import NIOCore
import ServiceLifecycle

/// `GET /api/thirdparties/stream`: the party's events as Server-Sent Events, live.
///
/// Each event is `id: <event id>`, `event: <type>`, `data: <EventBody JSON>`; a reconnecting
/// client sends `Last-Event-ID` (EventSource does so by itself) and continues after it. Data of a
/// grant that is no longer active is never sent. Only requests that accept `text/event-stream`
/// get the stream (406 otherwise). A comment line every 15 s keeps proxies from
/// closing an idle stream; the server ends a stream after `maximumDuration` (the client reconnects,
/// which also re-checks its credential).
struct EventStreamController {
    let events: PartyEvents
    let signal: ChangeSignal
    /// Streams being served, for `/metrics`.
    let open: InFlightCount
    var heartbeat: Duration = .seconds(15)
    var maximumDuration: Duration = .seconds(600)

    func addRoutes(to group: some RouterMethods<ThirdPartyRequestContext>) {
        group.get("stream", use: openStream)
    }

    /// GET /stream: checks the request, then streams until the client leaves.
    @Sendable func openStream(_ request: Request, context: ThirdPartyRequestContext) async throws -> Response {
        // A stream never ends on its own: only clients that ask for one get it (EventSource
        // always sends this), so a client expecting an ordinary response does not hang.
        guard request.headers[values: .accept].contains(where: { $0.lowercased().contains("text/event-stream") }) else {
            throw Problem(
                .notAcceptable, slug: "not-acceptable", title: "Not acceptable",
                detail: "This is a server-sent event stream; send 'Accept: text/event-stream'.")
        }
        var fields = FieldValidator()
        let lastEventId =
            fields.optional("Last-Event-ID", request.headers[.lastEventID]) { (raw: String) throws(InvalidValue) -> Int64 in
                guard let id = Int64(raw.trimmingCharacters(in: .whitespaces)), id >= 0 else {
                    throw InvalidValue("must be the id of an event this stream sent")
                }
                return id
            } ?? 0
        try fields.finish()
        let party = context.party
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream", .cacheControl: "no-store", .xAccelBuffering: "no"],
            body: ResponseBody { [open] writer in
                open.enter()
                defer { open.leave() }
                // On graceful shutdown, wake the loop so it sees the shutdown and ends the stream.
                try await withGracefulShutdownHandler {
                    try await stream(to: &writer, party: party.rowId, after: lastEventId, connectionClosed: context.connectionClosed)
                } onGracefulShutdown: {
                    signal.notify()
                }
                try await writer.finish(nil)
            }
        )
    }

    /// Writes the party's events as they come until the client leaves (noticed when its
    /// connection closes, not only at the next write), the maximum duration passes or the server
    /// shuts down.
    private func stream(
        to writer: inout any ResponseBodyWriter, party: Int64, after start: Int64, connectionClosed: EventLoopFuture<Void>?
    ) async throws {
        let closed = ChangeSignal()
        connectionClosed?.whenComplete { _ in closed.notify() }
        let clock = ContinuousClock()
        let deadline = clock.now + maximumDuration
        var last = start
        var lastWrite = clock.now
        try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
        let encoder = WireFormat.encoder()
        while clock.now < deadline, closed.generation == 0, !Task.isCancelled, !Task.isShuttingDownGracefully {
            let seen = signal.generation
            let batch = try await events.after(last, thirdPartyId: party, dataOnly: false, limit: 100)
            for event in batch {
                last = event.id
                if event.type == "data.created" || event.type == "data.imported", event.items.isEmpty { continue }  // nothing left to give
                let json = try encoder.encode(EventBody(id: String(event.id), event: event))
                var buffer = ByteBuffer(string: "id: \(event.id)\nevent: \(event.type)\ndata: ")
                buffer.writeBytes(json)
                buffer.writeString("\n\n")
                try await writer.write(buffer)
                lastWrite = clock.now
                try await events.recordDisclosure(of: event, via: .stream)
            }
            if batch.count == 100 { continue }
            if clock.now - lastWrite >= heartbeat {
                try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                lastWrite = clock.now
            }
            await ChangeSignal.wait(forAnyOf: [(signal, seen), (closed, 0)], timeout: min(heartbeat, deadline - clock.now))
        }
    }
}

extension HTTPField.Name {
    static let lastEventID = Self("Last-Event-ID")!
    static let xAccelBuffering = Self("X-Accel-Buffering")!
}
