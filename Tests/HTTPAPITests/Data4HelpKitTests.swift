import Data4HelpKit
import DatabaseTestSupport
import Foundation
import HTTPTypes
import OpenAPIRuntime
import Synchronization
import Testing

/// Data4HelpKit — the client generated from the contract and the sync engine — driving a real
/// `data4help serve` process, as an app would: the main journey, then the sync engine through an
/// outage (the app killed while offline), a server killed mid-upload, and a storm of `429`s.
/// Each time the server must end up holding every item exactly once.
@Suite("Data4HelpKit against a real server")
struct Data4HelpKitTests {
    typealias Instance = BalancedPairTests.Instance

    /// The credential an app holds: set by sign-in, read by every request.
    final class Credential: Sendable {
        private let value = Mutex<String?>(nil)
        func set(_ token: String?) { value.withLock { $0 = token } }
        func get() -> String? { value.withLock { $0 } }
    }

    static func client(_ port: Int, _ credential: Credential) -> Client {
        .data4Help(serverURL: URL(string: "http://127.0.0.1:\(port)")!, credential: { credential.get() })
    }

    /// An individual signs up through the kit (the confirmation token from the mailbox, as a
    /// person clicks the link) and signs in; the credential holds the login token then.
    static func signUpIndividual(_ client: Client, _ credential: Credential) async throws -> String {
        let tag = Fixtures.unique()
        let email = "kit-\(tag)@example.org", fiscalCode = "ID\(tag.uppercased())9"
        let registration = try await client.registerIndividual(
            body: .json(
                .init(
                    email: email, password: Fixtures.password, fiscalCode: fiscalCode, fullName: "Ada Kit", birthDate: "1960-05-01", sex: .female,
                    homeArea: "IT-MI")))
        _ = try registration.accepted
        let token = try await Mailbox.confirmationToken(for: email)
        _ = try await client.confirmIndividual(body: .json(.init(token: token))).created
        let login = try await client.loginIndividual(body: .json(.init(email: email, password: Fixtures.password)))
        credential.set(try login.ok.body.json.token)
        return fiscalCode
    }

    /// Heart-rate samples a second apart from `start`, as a watch records them.
    static func heartRates(_ count: Int, from start: Date) -> [SyncItem] {
        (0..<count).map { index in
            .sample(
                .init(type: .heartRate, value: .number(Double(60 + index % 40)), start: start.addingTimeInterval(Double(index)), source: "Kit Watch"))
        }
    }

    /// How many heart-rate samples the server holds for the signed-in individual (one summary).
    static func storedHeartRates(_ client: Client, since start: Date) async throws -> Int {
        let summary = try await client.summariseOwnSamples(
            query: .init(_type: .heartRate, bucket: .day, from: start.addingTimeInterval(-2 * 86_400), to: Date().addingTimeInterval(60)))
        return try summary.ok.body.json.items.reduce(0) { $0 + $1.count }
    }

    static func engine(_ client: Client, _ directory: URL, batchSize: Int, record: Progresses) throws -> SyncEngine {
        let configuration = SyncEngine.Configuration(
            batchSize: batchSize, initialBackoff: .milliseconds(50), maximumBackoff: .milliseconds(500),
            onProgress: { progress in record.append(progress) })
        return try SyncEngine(client: client, directory: directory, configuration: configuration)
    }

    /// Every progress report, in order.
    final class Progresses: Sendable {
        private let all = Mutex<[SyncProgress]>([])
        func append(_ progress: SyncProgress) { all.withLock { $0.append(progress) } }
        var reports: [SyncProgress] { all.withLock { $0 } }
        var waits: [(Duration, SyncProgress.WaitReason)] {
            reports.compactMap { report in
                if case .waiting(let duration, let reason) = report.state { return (duration, reason) }
                return nil
            }
        }
    }

    static func queueDirectory() -> URL {
        URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("kit-queue-\(UUID().uuidString.prefix(8))", isDirectory: true)
    }

    /// A `data4help serve` process (with `environment`), an individual signed up and in through
    /// the kit, and an empty queue directory for an engine.
    static func withSignedIn(
        environment: [String: String] = [:], _ body: (Instance, Client, URL) async throws -> Void
    ) async throws {
        let server = try await Instance(database: try await TestPostgres.shared.migratedDatabase(), environment: environment)
        defer { server.stop() }
        try await BalancedPairTests.waitReady(server.port)
        let credential = Credential()
        let client = Self.client(server.port, credential)
        _ = try await Self.signUpIndividual(client, credential)
        let directory = Self.queueDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await body(server, client, directory)
    }

    @Test(.timeLimit(.minutes(20)))
    func theMainJourneyThroughTheGeneratedClient() async throws {
        let server = try await Instance(database: try await TestPostgres.shared.migratedDatabase())
        defer { server.stop() }
        try await BalancedPairTests.waitReady(server.port)
        let person = Credential(), party = Credential(), stranger = Credential()
        let individual = Self.client(server.port, person), thirdParty = Self.client(server.port, party)
        let fiscalCode = try await Self.signUpIndividual(individual, person)
        _ = try await Self.signUpIndividual(Self.client(server.port, stranger), stranger)

        // Three readings with milliseconds, uploaded directly through the generated operation.
        let start = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 3600).rounded(.down) + 0.25)
        let items: [Components.Schemas.DataUpload.ItemsPayloadPayload] = (0..<3).map { index in
            .init(
                value1: .init(
                    id: "kit-\(index)", _type: .heartRate, value: .case1(Double(70 + index)), start: start.addingTimeInterval(Double(index))))
        }
        let uploaded = try await individual.uploadData(body: .json(.init(items: items))).ok.body.json
        #expect(uploaded.accepted == 3 && uploaded.duplicates == 0 && uploaded.rejected.isEmpty)

        // A third party registers, asks by fiscal code; the individual accepts.
        let email = "kit-party-\(Fixtures.unique())@acme.test"
        _ = try await thirdParty.registerThirdParty(body: .json(.init(name: "Kit Research", email: email, password: Fixtures.password))).accepted
        _ = try await thirdParty.confirmThirdParty(body: .json(.init(token: try await Mailbox.confirmationToken(for: email)))).created
        party.set(try await thirdParty.loginThirdParty(body: .json(.init(email: email, password: Fixtures.password))).ok.body.json.token)
        let asked = try await thirdParty.requestAccess(
            body: .json(.init(fiscalCode: fiscalCode, types: [.heartRate], purpose: "A study of resting heart rate"))
        ).accepted.body.json
        let toMe = try await individual.listRequestsToMe().ok.body.json.items
        #expect(toMe.map(\.id) == [asked.id])
        // Someone else cannot see or decide it.
        if case .notFound = try await Self.client(server.port, stranger).getRequestToMe(path: .init(requestId: asked.id)) {
        } else {
            Issue.record("another individual saw the request")
        }
        _ = try await individual.decideRequest(path: .init(requestId: asked.id), body: .json(.init(decision: .accept))).ok

        let granted = try await thirdParty.readGrantedSamples(path: .init(requestId: asked.id)).ok.body.json.items
        #expect(granted.count == 3)
        #expect(
            Set(granted.map { (sample: Components.Schemas.StoredSample) in sample.start })
                == Set((0..<3).map { start.addingTimeInterval(Double($0)) }), "times keep their milliseconds")
        let disclosures = try await individual.listDisclosures().ok.body.json.items
        #expect(!disclosures.isEmpty, "the read is in the individual's access log")
    }

    /// What went out, as an app's own middleware sees it after the kit's: each request's
    /// operation, coding and body size.
    final class WireLog: ClientMiddleware, Sendable {
        struct Sent: Sendable {
            let operation: String
            let coding: String?
            let bytes: Int
        }
        private let log = Mutex<[Sent]>([])
        var sent: [Sent] { log.withLock { $0 } }

        func intercept(
            _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
            next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
        ) async throws -> (HTTPResponse, HTTPBody?) {
            var bytes: [UInt8]?
            if let body { bytes = try await [UInt8](collecting: body, upTo: 64 << 20) }
            log.withLock { $0.append(Sent(operation: operationID, coding: request.headerFields[.contentEncoding], bytes: bytes?.count ?? 0)) }
            return try await next(request, bytes.map { HTTPBody($0) }, baseURL)
        }
    }

    /// The sync engine's uploads go gzip-coded, the real server stores them as if plain, and the
    /// bytes on the wire are a fraction of the JSON's; a sign-in's small body goes as it is.
    @Test(.timeLimit(.minutes(20)))
    func uploadsGoGzipCodedAndAreStoredAsPlainOnes() async throws {
        let server = try await Instance(database: try await TestPostgres.shared.migratedDatabase())
        defer { server.stop() }
        try await BalancedPairTests.waitReady(server.port)
        let credential = Credential()
        let base = URL(string: "http://127.0.0.1:\(server.port)")!
        let (codedWire, plainWire) = (WireLog(), WireLog())
        let coded = Client.data4Help(serverURL: base, credential: { credential.get() }, middlewares: [codedWire])
        let plain = Client.data4Help(serverURL: base, credential: { credential.get() }, compressingRequests: false, middlewares: [plainWire])
        _ = try await Self.signUpIndividual(coded, credential)
        let start = Date().addingTimeInterval(-3 * 3600)
        let readings = Self.heartRates(3_000, from: start)

        /// The readings through an engine of `client`, from a queue of its own.
        func sync(_ client: Client) async throws -> SyncProgress {
            let directory = Self.queueDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let engine = try Self.engine(client, directory, batchSize: 1_000, record: Progresses())
            try await engine.enqueue(readings)
            try await engine.drain()
            return await engine.current
        }
        #expect(try await sync(coded).accepted == 3_000)
        #expect(try await Self.storedHeartRates(coded, since: start) == 3_000)
        // The same readings again without coding: stored once, at several times the bytes.
        #expect(try await sync(plain).duplicates == 3_000)
        #expect(try await Self.storedHeartRates(plain, since: start) == 3_000)

        let codedUploads = codedWire.sent.filter { $0.operation == "uploadData" }
        let plainUploads = plainWire.sent.filter { $0.operation == "uploadData" }
        #expect(codedUploads.count == 3 && codedUploads.allSatisfy { $0.coding == "gzip" }, "\(codedUploads)")
        #expect(plainUploads.count == 3 && plainUploads.allSatisfy { $0.coding == nil }, "\(plainUploads)")
        let (codedBytes, plainBytes) = (codedUploads.reduce(0) { $0 + $1.bytes }, plainUploads.reduce(0) { $0 + $1.bytes })
        // Measured: about 27 bytes a reading against 128; what is left is mostly the items' ids
        // (32 hex digits of SHA-256 each, which no coding shrinks below 16 bytes).
        #expect(codedBytes * 3 < plainBytes, "coded \(codedBytes) bytes against \(plainBytes)")
        let signIns = codedWire.sent.filter { $0.operation == "loginIndividual" }
        #expect(!signIns.isEmpty && signIns.allSatisfy { $0.coding == nil }, "\(signIns)")
    }

    @Test(.timeLimit(.minutes(20)))
    func offlineThenBackWithTheAppKilledInBetween() async throws {
        try await Self.withSignedIn { server, client, directory in
            await server.kill()  // the phone goes offline

            let start = Date().addingTimeInterval(-4 * 3600)
            let items = Self.heartRates(2_500, from: start)
            let first = Progresses()
            do {
                let engine = try Self.engine(client, directory, batchSize: 500, record: first)
                try await engine.enqueue(items, anchor: (source: "watch", value: Data("after-2500".utf8)))
                let draining = Task { try await engine.drain() }
                // It keeps trying and waiting, longer each time, and uploads nothing.
                while first.waits.count < 4 { try await Task.sleep(for: .milliseconds(20)) }
                draining.cancel()  // the app is killed
                _ = await draining.result
                #expect(await engine.current.accepted == 0)
            }
            let reasons = first.waits.map(\.1)
            #expect(reasons.allSatisfy { if case .unreachable = $0 { true } else { false } }, "\(reasons)")

            // The app starts again later: the queue and the anchor were on the disk.
            try await server.restart()
            try await BalancedPairTests.waitReady(server.port)
            let second = Progresses()
            let engine = try Self.engine(client, directory, batchSize: 500, record: second)
            #expect(await engine.current.pending == 2_500)
            #expect(await engine.anchor(for: "watch") == Data("after-2500".utf8))
            try await engine.drain()
            let done = await engine.current
            #expect(done.accepted == 2_500 && done.duplicates == 0 && done.pending == 0)
            #expect(try await Self.storedHeartRates(client, since: start) == 2_500)

            // The source lost its anchor and hands the same readings over again: stored once.
            try await engine.enqueue(items)
            try await engine.drain()
            #expect(await engine.current.duplicates == 2_500)
            #expect(try await Self.storedHeartRates(client, since: start) == 2_500)
            #expect(try await engine.rejectedItems().isEmpty)
        }
    }

    @Test(.timeLimit(.minutes(20)))
    func theServerKilledMidUpload() async throws {
        try await Self.withSignedIn { server, client, directory in
            let start = Date().addingTimeInterval(-7 * 3600)
            let progress = Progresses()
            let engine = try Self.engine(client, directory, batchSize: 1_000, record: progress)
            try await engine.enqueue(Self.heartRates(20_000, from: start))
            let draining = Task { try await engine.drain() }
            while await engine.current.accepted < 5_000 { try await Task.sleep(for: .milliseconds(5)) }
            await server.kill()  // kill -9, whatever request is in flight
            try await Task.sleep(for: .milliseconds(300))
            try await server.restart()
            try await draining.value

            let done = await engine.current
            #expect(done.pending == 0 && done.rejected == 0)
            #expect(done.accepted + done.duplicates == 20_000, "accepted \(done.accepted), duplicates \(done.duplicates)")
            #expect(!progress.waits.isEmpty, "the engine never saw the server go away")
            #expect(try await Self.storedHeartRates(client, since: start) == 20_000)
        }
    }

    @Test(.timeLimit(.minutes(20)))
    func aStormOf429sIsWaitedOut() async throws {
        // Three requests a credential, refilled one every 10 s: six uploads run into the limit
        // however slowly a loaded machine answers (one refilled twice a second was never reached
        // while the whole suite ran: each upload took 1.5 s).
        try await Self.withSignedIn(environment: ["RATE_LIMIT_REQUESTS": "3", "RATE_LIMIT_WINDOW_SECONDS": "30"]) { _, client, directory in
            let start = Date().addingTimeInterval(-2 * 3600)
            let progress = Progresses()
            let engine = try Self.engine(client, directory, batchSize: 100, record: progress)
            try await engine.enqueue(Self.heartRates(600, from: start))
            try await engine.drain()

            let done = await engine.current
            #expect(done.accepted == 600 && done.pending == 0)
            let limited = progress.waits.filter { $0.1 == .rateLimited }
            #expect(!limited.isEmpty, "the limit was never reached")
            #expect(limited.allSatisfy { $0.0 >= .seconds(1) }, "a wait shorter than Retry-After: \(limited.map(\.0))")
            // Every refused request was followed by a wait, never by an immediate retry.
            #expect(done.requests == 6 + done.waits, "requests \(done.requests), waits \(done.waits)")
            try await Task.sleep(for: .seconds(10))  // the bucket refills for the count
            #expect(try await Self.storedHeartRates(client, since: start) == 600)
        }
    }
}
