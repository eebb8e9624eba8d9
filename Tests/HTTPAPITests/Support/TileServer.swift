import DatabaseLink
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

/// A map tile server on a loopback port, for the Track4Run map in the browser tests: every
/// `/tiles/{z}/{x}/{y}.png` is a small PNG (the browser draws it at 256 × 256), and every path
/// asked for is recorded.
final class TileServer: Sendable {
    let port: Int
    private let requested = Mutex<[String]>([])
    private let reservation: LoopbackPortReservation

    init() throws {
        reservation = try LoopbackPortReservation()
        port = reservation.port
    }

    /// `MAP_TILE_URL` for this server.
    var template: String { "http://127.0.0.1:\(port)/tiles/{z}/{x}/{y}.png" }
    var paths: [String] { requested.withLock { $0 } }

    /// One light grey pixel.
    private static let png = Data(
        base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGN48OABAAVEAqEuYekCAAAAAElFTkSuQmCC")!

    func start() -> LocalServer {
        reservation.release()
        let router = Router()
        router.get("tiles/{z}/{x}/{file}") { request, context -> Response in
            self.requested.withLock { $0.append(request.uri.path) }
            guard let file = context.parameters.get("file"), file.hasSuffix(".png") else { return Response(status: .notFound) }
            return Response(status: .ok, headers: [.contentType: "image/png"], body: .init(byteBuffer: ByteBuffer(bytes: Self.png)))
        }
        return LocalServer(Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port))))
    }
}
