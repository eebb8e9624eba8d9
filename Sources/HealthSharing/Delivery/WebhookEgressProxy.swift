import Crypto
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

/// The only way out for webhook deliveries: an HTTP `CONNECT` proxy inside this process, on a
/// loopback port, that resolves the receiver's host **once**, checks every address it resolved
/// to (`WebhookAddressPolicy`), and connects to the address it checked.
///
/// Checking a name and then letting the HTTP client resolve it again leaves a window for DNS
/// rebinding: a receiver's name can answer a public address to the check and `127.0.0.1` to the
/// connection. Through this proxy AsyncHTTPClient never resolves a receiver's name itself — it
/// asks the proxy for a tunnel to `host:port` — yet still sends the receiver's own `Host` header
/// and does TLS end to end with the receiver's name (SNI and certificate checks), which
/// connecting to an IP literal would lose. Egress proxies such as Stripe's Smokescreen work the
/// same way. Only this process can use it: every `CONNECT` must carry a random credential made
/// at start.
package final class WebhookEgressProxy: Sendable {
    package let port: Int
    /// `Proxy-Authorization` credentials for AsyncHTTPClient's proxy configuration.
    package let username = "data4help-webhooks"
    package let password: String
    private let channel: any Channel

    /// Starts listening on `127.0.0.1` (an ephemeral port); `close()` stops it.
    package static func start(
        policy: WebhookAddressPolicy, connectTimeout: TimeAmount = .seconds(5),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, logger: Logger
    ) async throws -> WebhookEgressProxy {
        let password = Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }).base64EncodedString()
        let expected = "Basic " + Data("data4help-webhooks:\(password)".utf8).base64EncodedString()
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    let decoder = ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes))
                    let encoder = HTTPResponseEncoder()
                    try child.pipeline.syncOperations.addHandler(decoder)
                    try child.pipeline.syncOperations.addHandler(encoder)
                    try child.pipeline.syncOperations.addHandler(
                        ConnectHandler(
                            expectedAuthorization: expected, policy: policy, connectTimeout: connectTimeout,
                            httpHandlers: [decoder, encoder], logger: logger
                        ))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return WebhookEgressProxy(channel: channel, password: password)
    }

    private init(channel: any Channel, password: String) {
        self.channel = channel
        self.port = channel.localAddress?.port ?? 0
        self.password = password
    }

    package func close() async {
        try? await channel.close()
    }
}

/// One client connection: reads `CONNECT host:port`, checks the credential, resolves and checks
/// the host, connects to the checked address, answers `200` and then splices the two
/// connections. Refusals: `407` (no or wrong credential), `405` (not CONNECT), `403` (the host
/// resolves to an address a webhook may not reach), `502` (no address, or the connection failed).
private final class ConnectHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private enum State {
        case idle
        case awaitingEnd(host: String, port: Int)
        case connecting
        case done
    }

    private var state = State.idle
    private let expectedAuthorization: String
    private let policy: WebhookAddressPolicy
    private let connectTimeout: TimeAmount
    private let httpHandlers: [any RemovableChannelHandler]
    private let logger: Logger

    init(
        expectedAuthorization: String, policy: WebhookAddressPolicy, connectTimeout: TimeAmount,
        httpHandlers: [any RemovableChannelHandler], logger: Logger
    ) {
        self.expectedAuthorization = expectedAuthorization
        self.policy = policy
        self.connectTimeout = connectTimeout
        self.httpHandlers = httpHandlers
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch (unwrapInboundIn(data), state) {
        case (.head(let head), .idle):
            let authorization = head.headers["Proxy-Authorization"].first ?? ""
            guard Self.constantTimeEqual(authorization, expectedAuthorization) else { return refuse(.proxyAuthenticationRequired, context: context) }
            guard head.method == .CONNECT, let (host, port) = Self.target(head.uri) else { return refuse(.methodNotAllowed, context: context) }
            state = .awaitingEnd(host: host, port: port)
        case (.end, .awaitingEnd(let host, let port)):
            state = .connecting
            connect(host: host, port: port, context: context)
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func connect(host: String, port: Int, context: ChannelHandlerContext) {
        let policy = self.policy
        let resolved = context.eventLoop.makeFutureWithTask { await policy.pinnedAddress(host: host, port: port) }
        resolved.assumeIsolated().whenComplete { [self] result in
            switch result {
            case .success(.success(let address)):
                ClientBootstrap(group: context.eventLoop)
                    .connectTimeout(connectTimeout)
                    .connect(to: address)
                    .assumeIsolated()
                    .whenComplete { [self] outcome in
                        switch outcome {
                        case .success(let upstream): splice(upstream, context: context)
                        case .failure: refuse(.badGateway, context: context)
                        }
                    }
            case .success(.failure(let refusal)):
                logger.notice("webhook connection refused at the egress check", metadata: ["reason": "\(refusal.reason)"])
                refuse(refusal.notAllowed ? .forbidden : .badGateway, context: context)
            case .failure:
                refuse(.badGateway, context: context)
            }
        }
    }

    /// Answers `200 Connection Established`, drops the HTTP handlers and glues the two channels.
    private func splice(_ upstream: any Channel, context: ChannelHandlerContext) {
        state = .done
        let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Content-Length": "0"])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { [self] _ in
            let (local, remote) = Splice.pair()  // same event loop: the upstream was made on this one
            do {
                try context.pipeline.syncOperations.addHandler(local)
                // This handler first: the decoder hands on any bytes after the CONNECT as it goes.
                context.pipeline.syncOperations.removeHandler(self, promise: nil)
                for handler in httpHandlers { context.pipeline.syncOperations.removeHandler(handler, promise: nil) }
            } catch {
                context.close(promise: nil)
                upstream.close(promise: nil)
                return
            }
            do {
                try upstream.pipeline.syncOperations.addHandler(remote)
            } catch {
                upstream.close(promise: nil)
                context.close(promise: nil)
            }
        }
    }

    private func refuse(_ status: HTTPResponseStatus, context: ChannelHandlerContext) {
        state = .done
        var headers: HTTPHeaders = ["Content-Length": "0", "Connection": "close"]
        if status == .proxyAuthenticationRequired { headers.add(name: "Proxy-Authenticate", value: "Basic realm=\"webhooks\"") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }

    /// `host:port` or `[v6]:port`.
    static func target(_ uri: String) -> (String, Int)? {
        guard let colon = uri.lastIndex(of: ":"), let port = Int(uri[uri.index(after: colon)...]), (1...65_535).contains(port) else { return nil }
        var host = String(uri[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }

    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

/// Two handlers, one in each of two channels on the same event loop (the upstream connection is
/// made on the client connection's loop), that pass every byte read on one to the other, read
/// only while the other can take more (back-pressure), and close both when either ends.
private final class Splice: ChannelDuplexHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny

    private var partner: Splice?
    private var context: ChannelHandlerContext?
    private var pendingRead = false

    static func pair() -> (Splice, Splice) {
        let a = Splice(), b = Splice()
        a.partner = b
        b.partner = a
        return (a, b)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if !context.channel.isActive { partner?.context?.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner?.context?.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        partner?.context?.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.context?.close(promise: nil)
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let partner, partner.pendingRead {
            partner.pendingRead = false
            partner.context?.read()
        }
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        if partner?.context?.channel.isWritable ?? true {
            context.read()
        } else {
            pendingRead = true
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
