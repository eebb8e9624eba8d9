import DatabaseLink
import DatabaseTestSupport
import Foundation
import HTTPAPI

/// A `DispatchCentreSimulator` on a free loopback port, for the AutomatedSOS tests; the server
/// under test is configured with `configure`.
final class DispatchCentre: Sendable {
    static let secret = "test-dispatch-secret-0123456789"

    let port: Int
    let simulator: DispatchCentreSimulator
    /// Held until `start()`: the centre is down (connections refused) and keeps its port.
    private let reservation: LoopbackPortReservation

    init(reportingTo server: String? = nil) throws {
        reservation = try LoopbackPortReservation()
        port = reservation.port
        simulator = DispatchCentreSimulator(
            secret: Self.secret,
            reports: server.map { .init(callbackBase: $0, acknowledgeAfter: .milliseconds(100), resolveAfter: .milliseconds(100)) }
        )
    }

    var url: String { "http://127.0.0.1:\(port)/dispatches" }
    var dispatches: [DispatchCentreSimulator.Dispatch] { simulator.dispatches }

    /// Listens until the returned task is cancelled.
    func start() -> LocalServer {
        reservation.release()
        return LocalServer(simulator.application(host: "127.0.0.1", port: port, logger: TestPostgres.logger))
    }

    /// Points a server at this centre, with contacts' webhooks allowed on loopback.
    func configure(_ configuration: inout AppConfiguration) {
        configuration.sosDispatchURL = url
        configuration.sosDispatchSecret = Self.secret
        // Generous, as on a loaded machine: with the whole suite at once on two cores the centre's
        // answer took over a second for a minute and more, so a 1 s timeout failed every retry
        // and the incident never showed as dispatched (CI, stop 47). Refused connections still
        // fail at once: the dispatcher does not retry connecting.
        configuration.sosDispatchTimeout = .seconds(8)
        WebhookTests.localDelivery(&configuration)
    }

    /// Waits until `condition` holds for the dispatches received (the bound, 90 s as
    /// `WebhookReceiver.wait`, only stops a wait for something that never comes).
    func wait(timeout: Duration = .seconds(90), until condition: ([DispatchCentreSimulator.Dispatch]) -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition(dispatches) {
            guard ContinuousClock.now < deadline else { throw WebhookReceiver.TimedOut() }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
