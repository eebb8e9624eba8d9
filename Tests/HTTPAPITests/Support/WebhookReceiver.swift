import Crypto
import DatabaseLink
import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

/// A real HTTP receiver for webhooks on a loopback port, written from the README alone: it
/// records every POST, answers with the status it is told to, and can hold an answer back.
final class WebhookReceiver: Sendable {
    struct Received: Sendable {
        let deliveryId: String
        let eventType: String
        let signature: String
        /// The request's authority (`Host`), as the sender wrote it.
        let host: String
        let body: [UInt8]

        var json: [String: Any] { ((try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]) ?? [:] }
        var type: String { json["type"] as? String ?? "" }
        var items: [[String: Any]] { ((json["data"] as? [String: Any])?["items"] as? [[String: Any]]) ?? [] }
    }

    private struct State {
        var received: [Received] = []
        var status: HTTPResponse.Status = .noContent
        var hold: Duration = .zero
    }

    let port: Int
    private let state = Mutex(State())
    /// Held until `start()`: connections are refused (the receiver is "down") and no other
    /// server or connection of a parallel test can take the port.
    private let reservation: LoopbackPortReservation

    /// A receiver on a port of its own, down until `start()`.
    init() throws {
        reservation = try LoopbackPortReservation()
        port = reservation.port
    }

    var url: String { "http://127.0.0.1:\(port)/hooks/data4help" }
    var received: [Received] { state.withLock { $0.received } }

    func answer(_ status: HTTPResponse.Status, after hold: Duration = .zero) {
        state.withLock {
            $0.status = status; $0.hold = hold
        }
    }

    /// Listens until the returned task is cancelled.
    func start() -> LocalServer {
        reservation.release()
        let router = Router()
        router.post("hooks/data4help") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 16 * 1024 * 1024)
            let (status, hold) = self.state.withLock { state in
                state.received.append(
                    Received(
                        deliveryId: request.headers[HTTPField.Name("Data4Help-Delivery")!] ?? "",
                        eventType: request.headers[HTTPField.Name("Data4Help-Event")!] ?? "",
                        signature: request.headers[HTTPField.Name("Data4Help-Signature")!] ?? "",
                        host: request.head.authority ?? "",
                        body: Array(body.readableBytesView)
                    ))
                return (state.status, state.hold)
            }
            if hold > .zero { try await Task.sleep(for: hold) }
            return Response(status: status)
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
        return LocalServer(app)
    }

    /// Waits until `condition` holds for what has been received, returning as soon as it does;
    /// `timeout` only stops a wait for something that never comes. 90 s by default: an aggregate
    /// subscription recomputed over a seeded population, then delivered, took over 30 s while the
    /// whole suite ran beside a build.
    func wait(timeout: Duration = .seconds(90), until condition: ([Received]) -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition(received) {
            guard ContinuousClock.now < deadline else { throw TimedOut() }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    struct TimedOut: Error {}

    /// The receiver's check, as the README describes it: HMAC-SHA256 over "<t>.<raw body>" with the
    /// endpoint secret, hex-encoded, equal to the `v1` value; `t` within 5 minutes of now.
    static func verify(_ received: Received, secret: String) -> Bool {
        var timestamp: String?
        var signatures: [String] = []
        for part in received.signature.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { timestamp = String(pair[1]) }
            if pair[0] == "v1" { signatures.append(String(pair[1])) }
        }
        guard let timestamp, let seconds = Double(timestamp), abs(Date().timeIntervalSince1970 - seconds) < 300 else { return false }
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data(timestamp.utf8) + Data(".".utf8) + Data(received.body), using: SymmetricKey(data: Data(secret.utf8)))
        let expected = mac.map { String(format: "%02x", $0) }.joined()
        return signatures.contains(expected)
    }
}
