import NIOCore
import NIOPosix
import Synchronization

/// A TCP proxy on a loopback port in front of a server, whose connections a test can cut all at
/// once — a phone's network dropping — while it keeps accepting new ones.
final class DroppingProxy: Sendable {
    let port: Int
    private let listener: any Channel
    private let connections = Connections()

    private final class Connections: Sendable {
        let open = Mutex<[any Channel]>([])
        func add(_ channel: any Channel) { open.withLock { $0.append(channel) } }
    }

    init(to target: Int) async throws {
        let connections = self.connections
        listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { inbound in
                connections.add(inbound)
                return ClientBootstrap(group: inbound.eventLoop)
                    .channelInitializer { outbound in
                        connections.add(outbound)
                        return outbound.pipeline.addHandler(Relay(to: inbound))
                    }
                    .connect(host: "127.0.0.1", port: target)
                    .flatMap { outbound in inbound.pipeline.addHandler(Relay(to: outbound)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = listener.localAddress?.port ?? 0
    }

    /// Cuts every connection made so far.
    func dropAll() {
        let channels = connections.open.withLock { channels in
            defer { channels = [] }
            return channels
        }
        for channel in channels { channel.close(promise: nil) }
    }

    func stop() {
        dropAll()
        listener.close(promise: nil)
    }

    /// Copies what one side reads to the other, and closes the other when one closes.
    private final class Relay: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let peer: any Channel

        init(to peer: any Channel) {
            self.peer = peer
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            peer.writeAndFlush(unwrapInboundIn(data), promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            peer.close(promise: nil)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
