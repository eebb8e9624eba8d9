import DatabaseLink
import DatabaseTestSupport
import ExternalPrograms
import Foundation
import HTTPAPI
import HTTPTypes
import Synchronization
import Testing

@Suite("Webhooks survive a server killed mid-delivery")
struct WebhookCrashTests {
    @Test(.timeLimit(.minutes(20))) func killedMidAttemptTheDeliveryIsMadeAgainWithTheSameId() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        let receiver = try WebhookReceiver()
        receiver.answer(.noContent, after: .seconds(60))  // the first attempt hangs: the server dies during it
        let listening = receiver.start()
        defer { listening.cancel() }

        // Set up with an instance that delivers nothing: the upload is acknowledged, the events wait in the outbox.
        let box = SetUp()
        try await TestServer.run(
            database: database,
            configure: {
                WebhookTests.localDelivery(&$0); $0.webhookWorkers = 0
            }
        ) { api in
            let (party, _) = try await api.thirdPartySession()
            box.secret = try await WebhookTests.register(api, party, receiver.url)
            let (person, _, _) = try await SubscriptionFeedTests.subscribe(api, party: party, types: ["heartRate"])
            #expect(try await api.send(.post, "/api/users/data", token: person, json: WebhookTests.upload(55, at: 5)).status == .ok)
        }

        // A real server process starts delivering, and is killed (SIGKILL) while the receiver holds the first POST.
        #expect(FileManager.default.isExecutableFile(atPath: ServerProcess.executable.path), "build the executable first (swift build)")
        let reservation = try LoopbackPortReservation.forImmediateBind()
        let server = try await ServerProcess.launch(
            database: database,
            environment: [
                "HOST": "127.0.0.1", "PORT": String(reservation.port), "WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true", "WEBHOOK_TIMEOUT_SECONDS": "2",
            ])
        try await receiver.wait { !$0.isEmpty }
        withExtendedLifetime(reservation) {}  // the server has delivered: it has long bound its port
        server.send(SIGKILL)
        await server.exited()
        let interrupted = try #require(receiver.received.first)
        #expect(interrupted.type == "request.granted")

        // Another instance takes over once the dead one's lease (2 × 2 s + 5 s) has run out.
        receiver.answer(.noContent)
        try await TestServer.run(database: database, configure: WebhookTests.localDelivery) { api in
            try await receiver.wait(timeout: .seconds(60)) { Set($0.map(\.deliveryId)).count == 2 && $0.last?.type == "data.created" }
        }
        var seen = Set<String>()
        let unique = receiver.received.filter { seen.insert($0.deliveryId).inserted }
        #expect(unique.map(\.type) == ["request.granted", "data.created"])
        #expect(receiver.received.filter { $0.deliveryId == interrupted.deliveryId }.count == 2)  // same id: the receiver drops the repeat
        #expect(unique.last?.items.first?["value"] as? Double == 55)
        #expect(receiver.received.allSatisfy { WebhookReceiver.verify($0, secret: box.secret) })
    }

    /// The secret learnt in the set-up closure, read after it.
    final class SetUp: Sendable {
        private let value = Mutex("")
        var secret: String {
            get { value.withLock { $0 } }
            set { value.withLock { $0 = newValue } }
        }
    }
}
