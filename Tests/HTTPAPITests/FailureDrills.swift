import AsyncHTTPClient
import DatabaseLink
import DatabaseTestSupport
import ExternalPrograms
import Foundation
import HTTPAPI
import HTTPTypes
import NIOCore
import NIOHTTP1
import PostgresNIO
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Failure drills, run by `make drills` (not by `make test`: they take minutes and print
/// figures). Each runs two real `data4help serve` processes behind Debian's nginx on a private
/// PostgreSQL cluster, with phones uploading heart rate through the balancer the whole time,
/// breaks something, and then counts: every sample a phone saw acknowledged must be in the
/// database, and the phones must have seen nothing but retriable failures.
///
/// (A webhook delivery interrupted by a crash is made again with the same id: `WebhookCrashTests`,
/// in `make test`.)
@Suite(
    "Failure drills (make drills)",
    .enabled(if: ProcessInfo.processInfo.environment["DATA4HELP_DRILLS"] == "1", "set DATA4HELP_DRILLS=1 (make drills)"),
    .serialized
)
struct FailureDrills {
    /// A private cluster, two instances, nginx in front.
    final class Stack: Sendable {
        let cluster: EmbeddedPostgres
        let database: DatabaseURL
        let instances: [BalancedPairTests.Instance]
        let balancer: BalancedPairTests.Balancer
        let root: URL

        init(environment: [String: String] = [:]) async throws {
            root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("data4help-drill-\(UUID().uuidString.prefix(8))")
            FileHandle.standardError.write(Data("drill: starting PostgreSQL, two instances, nginx\n".utf8))
            cluster = try await EmbeddedPostgres.start(.init(directory: root), logger: TestPostgres.logger)
            database = try await cluster.database(named: "data4help", logger: TestPostgres.logger)
            let settings = ["RATE_LIMIT_REQUESTS": "1000000", "TRUST_PROXY_HEADERS": "true"].merging(environment) { $1 }
            instances = [
                try await BalancedPairTests.Instance(database: database, environment: settings),
                try await BalancedPairTests.Instance(database: database, environment: settings),
            ]
            for instance in instances { try await BalancedPairTests.waitReady(instance.port) }
            balancer = try await BalancedPairTests.Balancer(upstreams: instances.map(\.port), nginx: try #require(BalancedPairTests.nginx))
            try await BalancedPairTests.waitReady(balancer.port)
        }

        var api: RemoteAPI { RemoteAPI(base: "http://127.0.0.1:\(balancer.port)") }

        /// Stops everything. Each instance still running gets SIGTERM; prints how long it took
        /// to exit and returns that with its exit status (the drills expect status 0 within a
        /// few seconds: a shutdown that only the 25 s bound ends is a crash exit).
        @discardableResult
        func stop() async -> [(seconds: Double, status: ChildProcess.Termination?)] {
            balancer.stop()
            var exits: [(seconds: Double, status: ChildProcess.Termination?)] = []
            for (index, instance) in instances.enumerated() where instance.process.isRunning {
                let started = ContinuousClock.now
                await instance.stopped()
                let took = started.duration(to: .now)
                exits.append((Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18, instance.process.terminationStatus))
                print(
                    "   instance \(index + 1) exited \(took) after SIGTERM (status \(instance.process.terminationStatus.map { "\($0)" } ?? "none"))")
            }
            cluster.stopImmediatelyBlocking()
            try? FileManager.default.removeItem(at: root)
            return exits
        }

        /// Stops everything and expects every instance still running to have exited cleanly
        /// and promptly after SIGTERM.
        func stopExpectingCleanExits(sourceLocation: SourceLocation = #_sourceLocation) async {
            for exit in await stop() {
                #expect(
                    exit.status == .exited(0) && exit.seconds < 10,
                    "SIGTERM ends serve cleanly (took \(exit.seconds) s, status \(exit.status.map { "\($0)" } ?? "none"))",
                    sourceLocation: sourceLocation)
            }
        }

        /// For `defer`, after a drill that failed midway: signals whatever still runs and stops
        /// the cluster, without waiting for the instances.
        func terminate() {
            balancer.stop()
            for instance in instances { instance.stop() }
            cluster.stopImmediatelyBlocking()
            try? FileManager.default.removeItem(at: root)
        }

        /// Runs one query on the drill's database and collects its rows.
        func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
            let client = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
            return try await client.whileRunning { try await client.query(query) }
        }

        /// Samples stored for these individuals (by email).
        func storedSamples(of emails: [String]) async throws -> Int {
            let rows = try await rows(
                """
                SELECT coalesce(sum(cardinality(b.vals)), 0)::int8 FROM sample_blocks b JOIN individuals i ON i.id = b.individual_id
                WHERE i.email = ANY(\(emails))
                """)
            return Int(try rows.first?.decode(Int64.self) ?? 0)
        }
    }

    /// Phones uploading batches of heart-rate samples through the balancer until stopped. A batch
    /// that fails (status or transport) is sent again until it is acknowledged — uploads are
    /// idempotent — and every failure is recorded by kind.
    final class Phones: Sendable {
        struct Tally: Sendable {
            var acknowledgedSamples = 0
            var acknowledgedBatches = 0
            var failures: [String: Int] = [:]
            var acknowledgedAt: [ContinuousClock.Instant] = []
        }

        let tally = Mutex(Tally())
        let stopping = Atomic<Bool>(false)
        let base: String
        let tokens: [String]
        let batch: Int

        init(base: String, tokens: [String], batch: Int = 50) {
            self.base = base
            self.tokens = tokens
            self.batch = batch
        }

        func run() async {
            await withTaskGroup(of: Void.self) { group in
                for (phone, token) in tokens.enumerated() {
                    group.addTask { await self.upload(phone: phone, token: token) }
                }
            }
        }

        private func upload(phone: Int, token: String) async {
            var sequence = 0
            let start = Date().addingTimeInterval(-86_400 * 2)
            while !stopping.load(ordering: .relaxed), !Task.isCancelled {
                let items: [[String: Any]] = (0..<batch).map { index in
                    let second = Double(sequence * batch + index)
                    return [
                        "type": "heartRate", "value": 60 + (index % 40), "unit": "bpm",
                        "start": ISO8601DateFormatter().string(from: start.addingTimeInterval(second)),
                    ]
                }
                sequence += 1
                let body = try! JSONSerialization.data(withJSONObject: ["items": items])
                while !Task.isCancelled {  // the same batch until it is acknowledged
                    var request = HTTPClientRequest(url: "\(base)/api/users/data")
                    request.method = .POST
                    request.headers.add(name: "Authorization", value: "Bearer \(token)")
                    request.headers.add(name: "Content-Type", value: "application/json")
                    request.body = .bytes(ByteBuffer(bytes: body))
                    do {
                        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
                        let data = try await response.body.collect(upTo: 1 << 20)
                        if response.status == .ok,
                            let reply = try JSONSerialization.jsonObject(with: Data(data.readableBytesView)) as? [String: Any],
                            let accepted = reply["accepted"] as? Int, let duplicates = reply["duplicates"] as? Int
                        {
                            tally.withLock {
                                $0.acknowledgedSamples += accepted + duplicates
                                $0.acknowledgedBatches += 1
                                $0.acknowledgedAt.append(.now)
                            }
                            break
                        }
                        tally.withLock { $0.failures["HTTP \(response.status.code)", default: 0] += 1 }
                    } catch {
                        tally.withLock { $0.failures["transport: \(type(of: error))", default: 0] += 1 }
                    }
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
        }
    }

    static func phones(_ stack: Stack, count: Int) async throws -> (Phones, [String]) {
        var tokens: [String] = [], emails: [String] = []
        for _ in 0..<count {
            let (token, account) = try await stack.api.individualSession()
            tokens.append(token)
            emails.append(account["email"] as! String)
        }
        return (Phones(base: "http://127.0.0.1:\(stack.balancer.port)", tokens: tokens), emails)
    }

    static func report(_ title: String, _ lines: [(String, String)]) {
        print("\n== \(title)")
        for (name, value) in lines { print("   \(name.padding(toLength: 42, withPad: " ", startingAt: 0)) \(value)") }
    }

    @Test(.timeLimit(.minutes(20)))
    func anInstanceKilledDuringIngestLosesNothingAcknowledged() async throws {
        let stack = try await Stack()
        defer { stack.terminate() }
        let (phones, emails) = try await Self.phones(stack, count: 16)
        let started = ContinuousClock.now
        let load = Task { await phones.run() }
        defer { load.cancel() }
        try await Task.sleep(for: .seconds(5))
        let before = phones.tally.withLock { $0.acknowledgedSamples }
        let killedAt = ContinuousClock.now
        await stack.instances[0].kill()
        try await Task.sleep(for: .seconds(10))
        phones.stopping.store(true, ordering: .relaxed)
        await load.value
        let tally = phones.tally.withLock { $0 }
        let stored = try await stack.storedSamples(of: emails)
        let afterKill = tally.acknowledgedAt.filter { $0 > killedAt }.count
        let longestGap = zip(tally.acknowledgedAt.sorted(), tally.acknowledgedAt.sorted().dropFirst()).map { $0.0.duration(to: $0.1) }.max() ?? .zero
        Self.report(
            "kill -9 of one of two instances during ingest through nginx",
            [
                ("phones (batches of 50 samples)", "16"),
                ("run", "\(started.duration(to: .now))"),
                ("samples acknowledged before the kill", "\(before)"),
                ("samples acknowledged in all", "\(tally.acknowledgedSamples) (\(tally.acknowledgedBatches) batches, \(afterKill) after the kill)"),
                ("samples in the database", "\(stored)"),
                (
                    "failures seen by phones (then retried)",
                    tally.failures.isEmpty ? "none" : tally.failures.map { "\($0.key) × \($0.value)" }.sorted().joined(separator: ", ")
                ),
                ("longest pause between acknowledgements", "\(longestGap)"),
            ])
        #expect(stored == tally.acknowledgedSamples, "every acknowledged sample is stored, and nothing else")
        #expect(afterKill > 0, "the surviving instance went on acknowledging")
        #expect(
            tally.failures.keys.allSatisfy { ["HTTP 502", "HTTP 503", "HTTP 504"].contains($0) || $0.hasPrefix("transport") },
            "retriable failures only")
        await stack.stopExpectingCleanExits()
    }

    @Test(.timeLimit(.minutes(20)))
    func postgreSQLRestartedDuringIngest() async throws {
        let stack = try await Stack()
        defer { stack.terminate() }
        let (phones, emails) = try await Self.phones(stack, count: 8)
        // /readyz of the first instance, every 100 ms: its transitions.
        let readiness = Mutex<[(ContinuousClock.Instant, Bool)]>([])
        let polling = Task {
            while !Task.isCancelled {
                let ready =
                    (try? await HTTPClient.shared.execute(
                        HTTPClientRequest(url: "http://127.0.0.1:\(stack.instances[0].port)/readyz"), timeout: .seconds(3)
                    ))?.status == .ok
                readiness.withLock { if $0.last?.1 != ready { $0.append((.now, ready)) } }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        let load = Task { await phones.run() }
        defer { load.cancel(); polling.cancel() }
        try await Task.sleep(for: .seconds(5))
        let stoppedAt = ContinuousClock.now
        FileHandle.standardError.write(Data("drill: restarting PostgreSQL\n".utf8))
        try await stack.cluster.restart(after: .seconds(5))
        FileHandle.standardError.write(Data("drill: PostgreSQL is back\n".utf8))
        let restartedAt = ContinuousClock.now
        try await Task.sleep(for: .seconds(15))
        phones.stopping.store(true, ordering: .relaxed)
        await load.value
        polling.cancel()
        let tally = phones.tally.withLock { $0 }
        let stored = try await stack.storedSamples(of: emails)
        let transitions = readiness.withLock { $0 }
        let afterRestart = tally.acknowledgedAt.filter { $0 > restartedAt }
        let firstAfter = afterRestart.min().map { restartedAt.duration(to: $0) }
        Self.report(
            "PostgreSQL stopped for 5 s and started again during ingest",
            [
                ("phones (batches of 50 samples)", "8"),
                (
                    "/readyz of instance 1",
                    transitions.map { "\($0.1 ? "green" : "red") at +\(stoppedAt.duration(to: $0.0))" }.joined(separator: ", ")
                ),
                ("first acknowledgement after the restart", firstAfter.map { "+\($0)" } ?? "none"),
                ("samples acknowledged", "\(tally.acknowledgedSamples) (\(afterRestart.count) batches after the restart)"),
                ("samples in the database", "\(stored)"),
                (
                    "failures seen by phones (then retried)",
                    tally.failures.isEmpty ? "none" : tally.failures.map { "\($0.key) × \($0.value)" }.sorted().joined(separator: ", ")
                ),
            ])
        #expect(stored == tally.acknowledgedSamples, "every acknowledged sample is stored")
        #expect(!afterRestart.isEmpty, "the instances reconnected by themselves")
        #expect(transitions.map(\.1).starts(with: [true, false, true]), "/readyz went red, then green")
        #expect(
            tally.failures.keys.allSatisfy { ["HTTP 502", "HTTP 503", "HTTP 504"].contains($0) || $0.hasPrefix("transport") },
            "retriable failures only")
        await stack.stopExpectingCleanExits()
    }

    /// The receiver refuses connections for two minutes while phones upload for one; then it
    /// comes up. Runs with WEBHOOK_BACKOFF_SCALE=0.01 (the retry schedule 1 min, 5 min, 30 min,
    /// 1 h, 3 h … a hundred times faster), so two minutes down stand for 3 h 20 min with the
    /// production schedule: the outage outlasts five retries of the oldest delivery.
    @Test(.timeLimit(.minutes(20)))
    func aWebhookReceiverDownForMinutesGetsEverythingAfter() async throws {
        let scale = 0.01
        let stack = try await Stack(environment: ["WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true", "WEBHOOK_BACKOFF_SCALE": "\(scale)"])
        defer { stack.terminate() }
        let receiver = try WebhookReceiver()  // down: connections refused until start()
        let api = stack.api
        let (party, _) = try await api.thirdPartySession()
        let registered = try await api.send(.put, "/api/thirdparties/webhook", token: party, json: ["url": receiver.url])
        let secret = try #require(registered.string("secret"))
        var tokens: [String] = []
        for _ in 0..<8 {
            tokens.append(try await SubscriptionFeedTests.subscribe(api, party: party, types: ["heartRate"]).person)
        }
        let phones = Phones(base: "http://127.0.0.1:\(stack.balancer.port)", tokens: tokens)
        let downAt = ContinuousClock.now
        let load = Task { await phones.run() }
        defer { load.cancel() }
        try await Task.sleep(for: .seconds(60))
        phones.stopping.store(true, ordering: .relaxed)
        await load.value
        try await Task.sleep(until: downAt + .seconds(120))
        let whileDown = try await stack.rows(
            "SELECT count(*)::int8, coalesce(sum(attempts), 0)::int8, count(*) FILTER (WHERE state = 'pending')::int8 FROM webhook_deliveries")
        let (created, attemptsWhileDown, pendingWhenUp) = try whileDown[0].decode((Int, Int, Int).self)
        FileHandle.standardError.write(Data("drill: receiver up, \(pendingWhenUp) of \(created) deliveries pending\n".utf8))
        let upAt = ContinuousClock.now
        let listening = receiver.start()
        defer { listening.cancel() }
        try await receiver.wait(timeout: .seconds(480)) { Set($0.map(\.deliveryId)).count >= created }
        let lastAt = ContinuousClock.now
        try await Task.sleep(for: .seconds(2))  // let the last attempts be recorded
        let outbox = try await stack.rows("SELECT public_id::text, request_id, id, state FROM webhook_deliveries ORDER BY id")
        let deliveries = try outbox.map { try $0.decode((String, Int64?, Int64, String).self) }
        let received = receiver.received
        let ids = Set(received.map(\.deliveryId))
        // Per grant, the order deliveries were first received in is the order they were created in.
        let position = Dictionary(uniqueKeysWithValues: deliveries.map { ($0.0, ($0.1 ?? 0, $0.2)) })
        var firstSeen = Set<String>(), lastPerGrant: [Int64: Int64] = [:], outOfOrder = 0
        for delivery in received where firstSeen.insert(delivery.deliveryId).inserted {
            guard let (grant, id) = position[delivery.deliveryId] else { continue }
            if let last = lastPerGrant[grant], last > id { outOfOrder += 1 }
            lastPerGrant[grant] = id
        }
        Self.report(
            "webhook receiver down for 2 minutes during uploads (retry schedule × \(scale))",
            [
                (
                    "phones uploading for the first minute",
                    "\(tokens.count), \(phones.tally.withLock { $0.acknowledgedBatches }) batches acknowledged"
                ),
                ("deliveries in the outbox", "\(created)"),
                ("attempts refused while down", "\(attemptsWhileDown)"),
                ("all received after the receiver came up", "+\(upAt.duration(to: lastAt))"),
                ("distinct deliveries received", "\(ids.count)"),
                ("repeats (same delivery id)", "\(received.count - ids.count)"),
                (
                    "states in the outbox",
                    Dictionary(grouping: deliveries, by: \.3).map { "\($0.key) \($0.value.count)" }.sorted().joined(separator: ", ")
                ),
                ("received out of order within a grant", "\(outOfOrder)"),
            ])
        #expect(created > tokens.count, "the uploads produced deliveries")
        #expect(ids == Set(deliveries.map(\.0)), "every delivery in the outbox was received")
        #expect(deliveries.allSatisfy { $0.3 == "delivered" })
        #expect(outOfOrder == 0)
        #expect(received.allSatisfy { WebhookReceiver.verify($0, secret: secret) }, "every body is signed")
        await stack.stopExpectingCleanExits()
    }

    /// Both instances dispatch emergencies. An enrolled individual's phone uploads three low
    /// heart-rate readings straight to instance 1 (cancel window 2 s), which detects the
    /// emergency, acknowledges the upload and is killed with `kill -9` before the window ends;
    /// instance 2, already running, finds the due incident and makes the one call.
    @Test(.timeLimit(.minutes(20)))
    func anSOSPendingOnAKilledInstanceIsDispatchedOnceByTheOther() async throws {
        let centre = try DispatchCentre()
        let listening = centre.start()
        defer { listening.cancel() }
        let stack = try await Stack(environment: [
            "SOS_DISPATCH_URL": centre.url, "SOS_DISPATCH_SECRET": DispatchCentre.secret, "SOS_DISPATCH_TIMEOUT_SECONDS": "1",
        ])
        defer { stack.terminate() }
        let (person, _) = try await stack.api.individualSession()
        let enrolled = try await stack.api.send(
            .put, "/api/users/sos", token: person,
            json: [
                "enabled": true, "consecutiveReadings": 3, "cancelWindowSeconds": 2,
            ])
        #expect(enrolled.status == .ok)
        let first = RemoteAPI(base: "http://127.0.0.1:\(stack.instances[0].port)")
        let sent = ContinuousClock.now
        let upload = try await first.send(
            .post, "/api/users/data", token: person, json: SOSIncidentTests.heartRates([30, 30, 30], from: Date().addingTimeInterval(-5)))
        let acknowledged = ContinuousClock.now
        await stack.instances[0].kill()
        let killed = ContinuousClock.now
        #expect(upload.status == .ok)
        try await centre.wait(timeout: .seconds(30)) { !$0.isEmpty }
        let dispatched = ContinuousClock.now
        try await Task.sleep(for: .seconds(3))  // time for a second call, were there one
        let incidents = try await stack.api.send(.get, "/api/users/sos/incidents", token: person).items
        Self.report(
            "SOS incident detected by an instance killed inside its 2 s cancel window",
            [
                ("upload sent → acknowledged", "\(sent.duration(to: acknowledged))"),
                ("acknowledged → instance 1 killed", "\(acknowledged.duration(to: killed))"),
                ("acknowledged → dispatched by instance 2", "\(acknowledged.duration(to: dispatched))"),
                (
                    "calls received by the dispatch centre",
                    "\(centre.dispatches.map(\.calls).reduce(0, +)) for \(centre.dispatches.count) incident(s)"
                ),
            ])
        #expect(centre.dispatches.count == 1 && centre.dispatches.first?.calls == 1, "dispatched once")
        #expect(incidents.count == 1 && incidents.first?["status"] as? String == "dispatched")
        #expect(acknowledged.duration(to: killed) < .seconds(2), "killed inside the cancel window")
        await stack.stopExpectingCleanExits()
    }
}
