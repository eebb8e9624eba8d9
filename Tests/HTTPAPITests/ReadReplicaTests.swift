import DatabaseLink
import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import PostgresNIO
import Testing

/// `READ_DATABASE_URL` against a real streaming replica: a private primary, copied with
/// `pg_basebackup -R` into a hot standby that logs every statement it runs, so the test sees
/// which server answered.
///
/// - aggregate queries read from the replica: with its replay paused, a population added on the
///   primary is not counted (and the replica's log shows the group query);
/// - an export reads from the replica once it has caught up, and from the primary while it lags,
///   so an export just after an upload always holds it;
/// - with the replica stopped, aggregates are answered from the primary.
@Suite("Read replica: aggregates and exports read from a streaming standby, the primary when it cannot")
struct ReadReplicaTests {
    /// Marks in the replica's statement log: the group aggregate's transaction, an export's sample page.
    static let aggregateMark = "set_config('jit', 'off', true)"
    static let exportMark = "FROM data4help_samples_page("

    @Test func aggregatesAndExportsReadFromTheReplicaAndFallBackToThePrimary() async throws {
        let root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("data4help-replica-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: root) }
        var primaryOptions = EmbeddedPostgres.Options(directory: root.appendingPathComponent("primary"))
        primaryOptions.durable = false
        let primary = try await EmbeddedPostgres.start(primaryOptions, logger: TestPostgres.logger)
        defer { primary.stopImmediatelyBlocking() }
        let primaryURL = try await primary.database(named: "data4help", logger: TestPostgres.logger)
        var replicaOptions = EmbeddedPostgres.Options(directory: root.appendingPathComponent("replica"))
        replicaOptions.durable = false
        // Every statement, and every lock wait longer than a second, in the replica's log: a step
        // that fails names what the replica was doing (see `step`).
        replicaOptions.settings = ["log_statement": "all", "log_lock_waits": "on", "deadlock_timeout": "1s"]
        let replica = try await EmbeddedPostgres.startReplica(of: primary, replicaOptions, logger: TestPostgres.logger)
        defer { replica.stopImmediatelyBlocking() }
        let replicaURL = replica.maintenanceURL.with(database: "data4help")
        @Sendable func replicaLog(_ mark: String) -> Int {
            let text = (try? String(contentsOf: replica.logFile, encoding: .utf8)) ?? ""
            return text.components(separatedBy: mark).count - 1
        }

        try await TestServer.run(
            database: primaryURL,
            configure: {
                $0.readDatabaseURL = replicaURL
                $0.aggregateMinimumGroup = 5
                // Production's limits (a lease in 0.5 s, a health check in 1 s, catch-up in 0.5 s)
                // send reads to the primary whenever the replica is slow; on a machine loaded by the
                // whole suite that happened mid-test — with 5 s limits too: a health check timed
                // out at load 12 and the paused replica's count was answered by the primary. What is
                // tested is where reads go, not how fast: limits that only a hang exceeds, except
                // where the test waits them out (a lagging export waits `catchUpTimeout`; a stopped
                // replica's first lease, `leaseTimeout`, under the client's 30 s).
                $0.replicaTiming.checkInterval = .seconds(1)
                $0.replicaTiming.checkTimeout = .seconds(60)
                $0.replicaTiming.leaseTimeout = .seconds(15)
                $0.replicaTiming.catchUpTimeout = .seconds(15)
            }
        ) { api in
            let onPrimary = Database(configuration: primaryURL.clientConfiguration(maximumConnections: 2), logger: TestPostgres.logger)
            let onReplica = Database(configuration: replicaURL.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
            try await onPrimary.whileRunning {
                try await onReplica.whileRunning {
                    try await PopulationSeeder(database: onPrimary).seed(individuals: 300, days: 40, tag: "early")
                    try await Self.waitUntilReplayed(primary: onPrimary, replica: onReplica)
                    try await Self.waitUntilServing(api)
                    let (party, _) = try await Self.step("sign up a party") { try await api.thirdPartySession() }

                    // Replay paused: what the primary gains now is not on the replica.
                    try await Self.pauseReplay(onReplica)
                    try await PopulationSeeder(database: onPrimary).seed(individuals: 300, days: 40, tag: "late")
                    let before = replicaLog(Self.aggregateMark)
                    let counted = try await Self.step("count on the paused replica", replicaLog: replica.logFile) {
                        try await Self.count(api, party: party, daysBack: 29)
                    }
                    #expect((250...350).contains(counted), "counted \(counted): the replica, paused, holds 300 people")
                    #expect(replicaLog(Self.aggregateMark) > before, "the group query ran on the replica")

                    // An export while the replica lags reads the primary, and so holds the upload.
                    let (person, _) = try await Self.step("sign up a person") { try await api.individualSession() }
                    let upload = try await Self.step("upload") {
                        try await api.send(
                            .post, "/api/users/data", token: person,
                            json: [
                                "items": [
                                    ["type": "heartRate", "value": 61, "unit": "bpm", "start": "2026-11-01T08:00:00Z"] as JSONObject
                                ]
                            ])
                    }
                    #expect(upload.json["accepted"] as? Int == 1)
                    let exportsBefore = replicaLog(Self.exportMark)
                    #expect(try await Self.step("export while the replica lags") { try await Self.exportedSamples(api, token: person) } == 1)
                    #expect(replicaLog(Self.exportMark) == exportsBefore, "a lagging replica serves no export")

                    // Caught up: the next export reads from the replica, and still holds everything.
                    _ = try await onReplica.query("SELECT pg_wal_replay_resume()")
                    try await Self.waitUntilReplayed(primary: onPrimary, replica: onReplica)
                    #expect(try await Self.step("export from the caught-up replica") { try await Self.exportedSamples(api, token: person) } == 1)
                    #expect(replicaLog(Self.exportMark) > exportsBefore, "a caught-up replica serves the export")
                }
            }

            // The replica gone: aggregates are answered by the primary, which counts everyone —
            // at once, not after a dead replica's timeouts (the client gives up after 30 s).
            try await replica.stop(immediately: true)
            let (party, _) = try await Self.step("sign up a party after the replica stopped") { try await api.thirdPartySession() }
            let counted = try await Self.step("count with the replica stopped") { try await Self.count(api, party: party, daysBack: 28) }
            #expect((550...650).contains(counted), "counted \(counted): the primary holds 600 people")
        }
    }

    /// Runs one step of the test, naming it if it throws: a request that timed out (seen on a
    /// loaded machine: the count on the paused replica answered 503 after 30 s while the replica's
    /// health check timed out) then says which one it was, with what the replica logged about
    /// lock waits and errors.
    static func step<T>(_ name: String, replicaLog: URL? = nil, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            let lines = replicaLog.flatMap { try? String(contentsOf: $0, encoding: .utf8) }?
                .split(separator: "\n")
                .filter {
                    $0.contains("waiting for") || $0.contains("ERROR") || $0.contains("FATAL") || $0.contains("PANIC") || $0.contains("acquired")
                }
                .suffix(20)
                .joined(separator: "\n")
            let logged = lines.map { "\nthe replica logged:\n" + $0 } ?? ""
            Issue.record("step '\(name)' failed: \(error)\(logged)")
            throw error
        }
    }

    /// Pauses the replica's replay at a point where it holds no replayed `AccessExclusiveLock`.
    /// A standby holds such a lock (from a truncating vacuum, a partition created on demand, any
    /// DDL on the primary) until it replays that transaction's end; paused in between, every
    /// query of that table waits for as long as the pause lasts. The pause is then taken again.
    static func pauseReplay(_ replica: Database) async throws {
        for _ in 0..<100 {
            _ = try await replica.query("SELECT pg_wal_replay_pause()")
            while try await replica.query("SELECT pg_get_wal_replay_pause_state()").first?.decode(String.self) != "paused" {
                try await Task.sleep(for: .milliseconds(10))
            }
            let held = try await replica.query(
                """
                SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                WHERE a.backend_type = 'startup' AND l.mode = 'AccessExclusiveLock'
                """
            ).first?.decode(Int64.self)
            if held == 0 { return }
            _ = try await replica.query("SELECT pg_wal_replay_resume()")
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("the replica's replay held an AccessExclusiveLock at every pause")
    }

    /// The noisy count of individuals with steps in the last `daysBack` days.
    static func count(_ api: APIClient, party: String, daysBack: Int) async throws -> Int {
        let today = Date()
        let from = ISO8601DateFormatter.string(
            from: today.addingTimeInterval(-Double(daysBack) * 86_400), timeZone: .gmt, formatOptions: .withFullDate)
        let to = ISO8601DateFormatter.string(from: today, timeZone: .gmt, formatOptions: .withFullDate)
        let reply = try await api.send(
            .post, "/api/thirdparties/aggregates", token: party,
            json: [
                "type": "stepCount", "statistic": "count", "from": from, "to": to, "epsilon": 1,
            ])
        try #require(reply.status == .created, "\(String(decoding: reply.data, as: UTF8.self))")
        let groups = try #require(reply.json["groups"] as? [[String: Any]])
        return try #require(groups.first?["count"] as? Int, "\(String(decoding: reply.data, as: UTF8.self))")
    }

    static func exportedSamples(_ api: APIClient, token: String) async throws -> Int {
        let export = try await api.send(.get, "/api/users/export", token: token)
        let text = String(decoding: export.data, as: UTF8.self)
        #expect(text.contains(#""kind":"end""#), "the export is complete")
        return text.components(separatedBy: #""kind":"sample""#).count - 1
    }

    /// Waits until the server's health check has found the replica up (`db_replica_up` 1 on
    /// `/metrics`): until then every read goes to the primary, by design.
    static func waitUntilServing(_ api: some APISending) async throws {
        for _ in 0..<600 {
            if try await HeldResourcesTests.gauges(api)["db_replica_up"] == 1 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("the server did not find the replica up within a minute")
    }

    /// Waits until the replica has replayed everything the primary has written so far.
    static func waitUntilReplayed(primary: Database, replica: Database) async throws {
        let lsn = try #require(try await primary.query("SELECT pg_current_wal_insert_lsn()::text").first?.decode(String.self))
        for _ in 0..<500 {
            let done = try await replica.query("SELECT pg_last_wal_replay_lsn() >= \(lsn)::pg_lsn").first?.decode(Bool.self)
            if done == true { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("the replica did not catch up within 10 s")
    }
}
