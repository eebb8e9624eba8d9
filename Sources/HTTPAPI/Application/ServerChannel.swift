// The server's child channel and the two handlers it adds after the HTTP request decoder:
// answers for requests the parser refuses, and hang-up of event streams whose client left.
import Foundation
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// Answers a request NIO's HTTP parser refuses — a method it does not know, a broken request
/// line, a malformed or contradictory header — with a problem document, then closes the
/// connection.
///
/// Such a request never reaches the router, so no middleware sees it: without this handler the
/// first request of a connection got no answer at all (the WebSocket upgrade handler fails and
/// the connection is dropped) and a later one the framework's empty `400`. It sits where NIO's
/// own `HTTPServerProtocolErrorHandler` would, right after the HTTP codec, and never interleaves
/// its answer with a response in progress: the answers still owed to earlier pipelined requests
/// are written first. The parser's error is not passed on, so nothing after it writes a second
/// answer.
final class MalformedRequestHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Request heads read, and responses ended (in order: HTTP/1.1 answers requests in turn).
    private var requestsRead = 0
    private var responsesEnded = 0
    /// Between a request's head and its end, inbound; between a response's head and end, outbound.
    private var reading = false
    private var responding = false
    /// The problem to answer once `responsesEnded` reaches `after`.
    private var owed: (status: HTTPResponseStatus, body: ByteBuffer, after: Int)?
    private var failed = false
    /// After a WebSocket upgrade the connection carries frames, not HTTP parts: hands off. Set
    /// when the `101` goes out — before the upgrader removes the HTTP codec and the WebSocket
    /// handler writes its first frame (NIO's `upgradeComplete` event comes only after that, and
    /// only to the handlers after the upgrade handler).
    private var upgraded = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !upgraded {
            switch unwrapInboundIn(data) {
            case .head: requestsRead += 1; reading = true
            case .end: reading = false
            case .body: break
            }
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !upgraded else { return context.write(data, promise: promise) }
        let part = unwrapOutboundIn(data)
        context.write(data, promise: promise)
        switch part {
        case .head(let head) where head.status == .switchingProtocols:
            upgraded = true  // WebSocket frames follow, in both directions: hands off from now
        case .head(let head) where head.status.code >= 200: responding = true
        case .end:
            responding = false
            responsesEnded += 1
            if let owed, responsesEnded >= owed.after { answer(context: context) }
        default: break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !upgraded, let parserError = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        guard !failed else { return }
        failed = true
        // Not passed on: after this handler, Hummingbird would answer an empty 400 of its own, or
        // on a connection's first request log the upgrade it then gives up as an error (one log
        // line per malformed request: a way to flood the log). See `answer` for how it ends.
        // A request broken in its body was passed on at its head: if its response has begun,
        // there is no answering it any more — only closing.
        let earlier = reading ? requestsRead - 1 : requestsRead
        if reading, responding, responsesEnded == earlier {
            context.close(promise: nil)
            return
        }
        let (status, body) = Self.problem(for: parserError)
        owed = (status, body, earlier)
        if responsesEnded >= earlier { answer(context: context) }
    }

    private func answer(context: ChannelHandlerContext) {
        guard let (status, body, _) = owed else { return }
        owed = nil
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/problem+json")
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        headers.add(name: "Connection", value: "close")
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "Cache-Control", value: "no-store")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        // Then the connection ends. On its first request the upgrade handler (next) still waits
        // for a head: told that the input closed, it gives up quietly (a plain close would make it
        // fail with a state error that Hummingbird logs as an error).
        let firstRequest = requestsRead == 0
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            if firstRequest { context.fireUserInboundEventTriggered(ChannelEvent.inputClosed) }
            context.close(promise: nil)
        }
    }

    private static func problem(for error: HTTPParserError) -> (HTTPResponseStatus, ByteBuffer) {
        if case .invalidMethod = error {
            return (
                .notImplemented,
                body(
                    status: 501, slug: "method-not-implemented", title: "Method not implemented",
                    detail: "This server does not implement the request's method; the API uses GET, POST, PUT, PATCH and DELETE."
                )
            )
        }
        return (
            .badRequest,
            body(
                status: 400, slug: "malformed-request", title: "Malformed request",
                detail: "The request is not valid HTTP/1.1: \(reason(error))."
            )
        )
    }

    private static func reason(_ error: HTTPParserError) -> String {
        switch error {
        case .invalidURL, .invalidPath, .invalidQueryString, .invalidFragment: "the request target is not a valid URL path"
        case .invalidHeaderToken, .invalidCharactersUsed: "a header field's name or value holds characters it may not"
        case .invalidContentLength, .unexpectedContentLength: "the Content-Length header is invalid or given twice"
        case .invalidChunkSize: "a chunk's size is invalid"
        case .headerOverflow: "the header section is too large"
        case .invalidVersion: "the HTTP version is not one this server speaks"
        default: "the request line or header section is malformed"
        }
    }

    private static func body(status: Int, slug: String, title: String, detail: String) -> ByteBuffer {
        let object: [String: Any] = ["type": "tag:data4help,2026:problem:\(slug)", "title": title, "status": status, "detail": detail]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return ByteBuffer(bytes: data)
    }
}

/// Closes a connection whose client has half-closed it while it is being sent an event stream.
///
/// A client that leaves an event stream (or the balancer in front of it) closes its side; the
/// server's channel allows half-closure (an HTTP/1.1 client may close its side and still await
/// a response), so without this the stream would only notice at its next write — a heartbeat
/// later — holding the stream, its database polling and its wake-ups until then. An event
/// stream never ends by itself, so a client that closed its side has gone: the connection is
/// closed, and the stream ends on its close (`AppRequestContext.connectionClosed`).
final class EventStreamHangupHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart

    private var streaming = false
    private var upgraded = false

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if !upgraded {
            switch unwrapOutboundIn(data) {
            case .head(let head) where head.status == .switchingProtocols:
                upgraded = true  // as in MalformedRequestHandler: frames follow, hands off
            case .head(let head): streaming = head.headers["Content-Type"].contains { $0.lowercased().hasPrefix("text/event-stream") }
            case .end: streaming = false
            case .body: break
            }
        }
        context.write(data, promise: promise)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event, streaming, !upgraded { context.close(promise: nil) }
        context.fireUserInboundEventTriggered(event)
    }
}

/// The server's child channel: Hummingbird's HTTP/1.1 with WebSocket upgrade, plus
/// `MalformedRequestHandler` and `EventStreamHangupHandler` right after NIO's HTTP codec (the
/// additional handlers Hummingbird takes are placed after its own codec and only once a request
/// head was parsed: too late for a first request the parser refuses).
struct ProblemAnsweringChannel<Inner: ServerChildChannel>: ServerChildChannel {
    let inner: Inner

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Inner.Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            // Right after the request decoder, so before the upgrade handler: the `101` it writes
            // on a WebSocket upgrade passes through them (writes go towards the socket), which
            // tells them that frames follow before the first frame is written.
            let decoder = try channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try channel.pipeline.syncOperations.addHandlers([MalformedRequestHandler(), EventStreamHangupHandler()], position: .after(decoder))
            return value
        }
    }

    func handle(value: Inner.Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}
