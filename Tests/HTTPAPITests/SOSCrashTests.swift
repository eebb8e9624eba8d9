import AsyncHTTPClient
import DatabaseLink
import DatabaseTestSupport
import ExternalPrograms
import Foundation
import HTTPAPI
import NIOCore
import NIOHTTP1
import Testing

@Suite("AutomatedSOS survives a server killed between detection and dispatch")
struct SOSCrashTests {
    @Test(.timeLimit(.minutes(20))) func killedAfterDetectionTheIncidentIsDispatchedOnceAfterRestart() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        let centre = try DispatchCentre()
        let listening = centre.start()
        defer { listening.cancel() }

        // Enrol through an instance that dispatches nothing; its login token works on every instance.
        let box = WebhookCrashTests.SetUp()
        try await TestServer.run(database: database) { api in
            let (person, _) = try await api.individualSession()
            try await SOSIncidentTests.enrol(api, person, ["cancelWindowSeconds": 4])
            box.secret = person
        }

        // A real server process detects the emergency and is killed (SIGKILL) inside the cancel window.
        #expect(FileManager.default.isExecutableFile(atPath: ServerProcess.executable.path), "build the executable first (swift build)")
        let reservation = try LoopbackPortReservation.forImmediateBind()
        let port = reservation.port
        let server = try await ServerProcess.launch(
            database: database,
            environment: [
                "HOST": "127.0.0.1", "PORT": String(port), "SOS_DISPATCH_URL": centre.url, "SOS_DISPATCH_SECRET": DispatchCentre.secret,
            ])
        defer { server.send(SIGKILL) }
        let base = "http://127.0.0.1:\(port)"
        let deadline = ContinuousClock.now + .seconds(30)
        while (try? await HTTPClient.shared.execute(HTTPClientRequest(url: "\(base)/readyz"), timeout: .seconds(1)))?.status != .ok {
            guard ContinuousClock.now < deadline else { throw WebhookReceiver.TimedOut() }
            try await Task.sleep(for: .milliseconds(100))
        }
        withExtendedLifetime(reservation) {}  // the server listens: the port is its own
        var upload = HTTPClientRequest(url: "\(base)/api/users/data")
        upload.method = .POST
        upload.headers.add(name: "Authorization", value: "Bearer \(box.secret)")
        upload.headers.add(name: "Content-Type", value: "application/json")
        let body = try JSONSerialization.data(withJSONObject: SOSIncidentTests.heartRates([30, 30, 30], from: Date().addingTimeInterval(-5)))
        upload.body = .bytes(ByteBuffer(bytes: body))
        let acknowledged = try await HTTPClient.shared.execute(upload, timeout: .seconds(10))
        server.send(SIGKILL)
        await server.exited()
        #expect(acknowledged.status == .ok)

        // The restarted service (another instance here) finds the due incident and makes the one call.
        try await Task.sleep(for: .seconds(1))
        #expect(centre.dispatches.isEmpty)
        try await TestServer.run(database: database, configure: centre.configure) { api in
            let incidents = try await SOSIncidentTests.waitForIncidents(api, box.secret) { $0.first?["status"] as? String == "dispatched" }
            // One dispatch: the centre keys calls by the incident (Idempotency-Key). Usually one
            // call too; on a loaded machine an answer slower than the test's dispatch timeout is
            // called again, and the centre still dispatches once (seen under a parallel build).
            #expect(incidents.count == 1 && (incidents[0]["dispatchAttempts"] as? Int ?? 0) >= 1)
            #expect(
                centre.dispatches.count == 1 && centre.dispatches[0].calls >= 1 && centre.dispatches[0].incidentId == incidents[0]["id"] as? String)
        }
    }
}
