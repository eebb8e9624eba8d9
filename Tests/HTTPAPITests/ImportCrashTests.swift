import DatabaseLink
import DatabaseTestSupport
import ExternalPrograms
import Foundation
import HTTPAPI
import HTTPTypes
import HealthSharing
import PostgresNIO
import Testing

@Suite("Imports survive a server killed mid-import")
struct ImportCrashTests {
    /// An Apple Health export of `count` heart-rate records, one a minute from 2025-03-01.
    static func export(records count: Int) -> String {
        var text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE HealthData [
            <!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary|ClinicalRecord)*)>
            <!ATTLIST HealthData locale CDATA #REQUIRED>
            ]>
            <HealthData locale="en_GB">
             <ExportDate value="2025-06-01 10:00:00 +0000"/>

            """
        let start = Date(timeIntervalSince1970: 1_740_787_200)  // 2025-03-01T00:00:00Z
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "Europe/Rome")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss Z"
        for minute in 0..<count {
            let date = formatter.string(from: start.addingTimeInterval(Double(minute * 60)))
            text += """
                 <Record type="HKQuantityTypeIdentifierHeartRate" sourceName="Test Watch" unit="count/min" \
                startDate="\(date)" endDate="\(date)" value="\(55 + minute % 60)"/>

                """
        }
        return text + "</HealthData>\n"
    }

    @Test(.timeLimit(.minutes(20))) func killedMidImportASecondServerContinuesWithNothingLostOrDoubled() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        let total = 30_000
        let file = Self.export(records: total)

        // A real server process takes the upload and starts reading it; it is killed (SIGKILL)
        // once it has committed a first batch.
        #expect(FileManager.default.isExecutableFile(atPath: ServerProcess.executable.path), "build the executable first (swift build)")
        let reservation = try LoopbackPortReservation.forImmediateBind()
        let server = try await ServerProcess.launch(
            database: database,
            environment: [
                "HOST": "127.0.0.1", "PORT": String(reservation.port), "IMPORT_LEASE_SECONDS": "5",
            ])
        defer { server.send(SIGKILL) }
        let remote = RemoteAPI(base: "http://127.0.0.1:\(reservation.port)")
        try await BalancedPairTests.waitReady(reservation.port)
        withExtendedLifetime(reservation) {}  // the server listens: the port is its own
        let (person, account) = try await remote.individualSession()
        let posted = try await remote.send(.post, "/api/users/imports", token: person, raw: file, headers: [.contentType: "application/xml"])
        #expect(posted.status == .accepted)
        let id = try #require(posted.string("id"))
        var progress: [String: Any] = [:]
        let deadline = ContinuousClock.now + .seconds(120)
        while (progress["records"] as? Int ?? 0) == 0 {
            guard ContinuousClock.now < deadline else { throw WebhookReceiver.TimedOut() }
            try await Task.sleep(for: .milliseconds(10))
            progress = try await remote.send(.get, "/api/users/imports/\(id)", token: person).json
        }
        server.send(SIGKILL)
        await server.exited()
        let committed = progress["records"] as? Int ?? 0
        #expect(progress["state"] as? String == "running" && committed < total, "the import should be under way when the server dies: \(progress)")

        // Another instance claims it once the dead one's lease (5 s) has run out, and goes on
        // from the last checkpoint.
        try await TestServer.run(database: database, configure: { $0.importSettings.lease = .seconds(5) }) { api in
            let login = try await api.send(.post, "/api/users/login", json: ["email": account["email"]!, "password": Fixtures.password])
            let token = try #require(login.string("token"))
            let job = try await ImportTests.finished(api, token, id, timeout: .seconds(180))
            #expect(job["state"] as? String == "done")
            #expect(job["records"] as? Int == total)
            #expect(ImportTests.types(job)["heartRate"] == ["accepted": total, "duplicates": 0])
        }
        let direct = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
        let stored = try await direct.whileRunning {
            try await direct.query(
                """
                SELECT count(*)::int8,
                       count(DISTINCT (b.sample_type, b.block_start, COALESCE(u.key, data4help_settled_key(data4help_offset(u.offset_ms, u.offset_s), u.tag))))::int8
                FROM sample_blocks b JOIN individuals i ON i.id = b.individual_id,
                     unnest(b.offsets_ms, b.offsets_s, b.keys, b.tags) AS u(offset_ms, offset_s, key, tag)
                WHERE i.email = \(account["email"] as? String ?? "")
                """)[0].decode((Int64, Int64).self)
        }
        #expect(stored.0 == Int64(total) && stored.1 == Int64(total), "stored \(stored.0) samples, \(stored.1) distinct")
    }
}
