import Data4HelpCore
import DatabaseLink
import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import HealthSharing
import PostgresNIO
import Testing

/// Settled history in hour blocks (migration 0032): an import stores each old hour as one block,
/// uploads into such an hour join its block (and are duplicates there), an upload into a settled
/// hour with no block starts one (migration 0046: no minute block is written behind the compactor),
/// and every reader — listing pages in both orders, time windows,
/// summaries — sees each sample once, in order, whatever block holds it.
@Suite("Hour blocks: imported history stored by the hour")
struct HourBlockTests {
    /// An export of heart rates every 7 minutes from 10:00 (26: 10:00 to 12:55 on 1 May 2023,
    /// UTC) and one step count from 11:50 to 12:10 — or the `records` given.
    static func export(_ records: [(type: String, unit: String, start: String, end: String, value: String)]) -> String {
        let lines = records.map { record in
            #" <Record type="HKQuantityTypeIdentifier\#(record.type)" sourceName="Anna’s Apple Watch" unit="\#(record.unit)" startDate="2023-05-01 \#(record.start) +0000" endDate="2023-05-01 \#(record.end) +0000" value="\#(record.value)"/>"#
        }
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE HealthData [
            <!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary|ClinicalRecord)*)>
            <!ATTLIST HealthData locale CDATA #REQUIRED>
            ]>
            <HealthData locale="en_GB">
            \(lines.joined(separator: "\n"))
            </HealthData>
            """
    }

    static func clock(_ minutes: Int) -> String { String(format: "%02d:%02d:00", minutes / 60, minutes % 60) }

    static let heartRates = (0..<26).map { k in
        (type: "HeartRate", unit: "count/min", start: clock(600 + 7 * k), end: clock(600 + 7 * k), value: "\(60 + k)")
    }
    static let steps = [(type: "StepCount", unit: "count", start: "11:50:00", end: "12:10:00", value: "400")]

    /// The individual's heart-rate blocks: start (UTC, `HH:mm`), minutes, samples.
    static func blocks(_ database: DatabaseURL, email: String, type: String = "heartRate") async throws -> [String] {
        let direct = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
        return try await direct.whileRunning {
            try await direct.query(
                """
                SELECT to_char(b.block_start AT TIME ZONE 'UTC', 'HH24:MI') || ' ' || b.block_minutes || ' ' || cardinality(b.vals)
                FROM sample_blocks b JOIN individuals i ON i.id = b.individual_id JOIN sample_types t ON t.code = b.sample_type
                WHERE i.email = \(email) AND t.name = \(type)
                ORDER BY b.block_start
                """
            ).map { try $0.decode(String.self) }
        }
    }

    @Test func importedHoursAreOneBlockAndEveryReaderSeesEachSampleOnce() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database) { api in
            let (person, account) = try await api.individualSession()
            let email = try #require(account["email"] as? String)

            let first = try #require(try await ImportTests.post(api, person, Self.export(Self.heartRates + Self.steps)).string("id"))
            let job = try await ImportTests.finished(api, person, first)
            #expect(ImportTests.types(job)["heartRate"] == ["accepted": 26, "duplicates": 0])
            #expect(try await Self.blocks(database, email: email) == ["10:00 60 9", "11:00 60 9", "12:00 60 8"])

            // An upload into an imported hour joins its block; the same again is a duplicate; an
            // upload into a settled hour with no block starts its hour block, as an import does.
            let late: [any Sendable] = [
                ["type": "heartRate", "value": 99, "start": "2023-05-01T10:31:30Z"] as JSONObject,
                ["type": "heartRate", "value": 98, "start": "2023-05-01T13:02:00Z"] as JSONObject,
            ]
            let uploaded = try await api.send(.post, "/api/users/data", token: person, json: ["items": late])
            #expect(uploaded.json["accepted"] as? Int == 2)
            let again = try await api.send(.post, "/api/users/data", token: person, json: ["items": late])
            #expect(again.json["accepted"] as? Int == 0 && again.json["duplicates"] as? Int == 2)

            // A second import: hour 13's record joins the upload's hour block; hour 14 had nothing
            // and becomes an hour block; the first import's records are duplicates.
            let more = [
                (type: "HeartRate", unit: "count/min", start: "13:30:00", end: "13:30:00", value: "77"),
                (type: "HeartRate", unit: "count/min", start: "14:10:00", end: "14:10:00", value: "78"),
                (type: "HeartRate", unit: "count/min", start: "14:20:00", end: "14:20:00", value: "79"),
            ]
            let second = try #require(try await ImportTests.post(api, person, Self.export(Self.heartRates + more)).string("id"))
            #expect(ImportTests.types(try await ImportTests.finished(api, person, second))["heartRate"] == ["accepted": 3, "duplicates": 26])
            #expect(
                try await Self.blocks(database, email: email) == [
                    "10:00 60 10", "11:00 60 9", "12:00 60 8", "13:00 60 2", "14:00 60 2",
                ])

            // Every reader, before and after the compactor moves the imports' spans into 8-hour blocks.
            try await Self.everyReaderSeesEachSampleOnce(api, person)
            let direct = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
            let report = try await direct.whileRunning {
                // As if the periodic pass had covered everything up to now: only the imports'
                // requests (migration 0051) reach back to 2023.
                try await direct.query("UPDATE sample_compaction SET compacted_before = now()")
                #expect(try await direct.query("SELECT count(*)::int8 FROM compaction_requests")[0].decode(Int64.self) == 1)
                let compactor = SampleCompactor(
                    database: direct, interval: .seconds(3_600), schemaReady: StartupGate(), logger: TestPostgres.logger)
                let report = try #require(try await compactor.pass())
                #expect(try await direct.query("SELECT count(*)::int8 FROM compaction_requests")[0].decode(Int64.self) == 0)
                return report
            }
            #expect(report.requests == 1 && report.individuals == 0 && report.merged.eightHourBlocks == 2, "\(report)")
            #expect(try await Self.blocks(database, email: email) == ["08:00 480 31"])
            #expect(try await Self.blocks(database, email: email, type: "stepCount") == ["08:00 480 1"])
            try await Self.everyReaderSeesEachSampleOnce(api, person)
        }
    }

    static func everyReaderSeesEachSampleOnce(_ api: APIClient, _ person: String) async throws {
        do {
            // Every sample once, in time order, in pages of every size and both orders.
            var expected = (0..<26).map { "2023-05-01T" + Self.clock(600 + 7 * $0) + ".000Z" }
            expected += ["2023-05-01T10:31:30.000Z", "2023-05-01T13:02:00.000Z", "2023-05-01T13:30:00.000Z"]
            expected += ["2023-05-01T14:10:00.000Z", "2023-05-01T14:20:00.000Z"]
            expected.sort()
            for limit in [1, 2, 3, 5, 8, 13, 100] {
                let ascending = try await OwnDataListingTests.pages(api, person, "type=heartRate&order=asc&limit=\(limit)")
                #expect(ascending.compactMap { $0["start"] as? String } == expected, "ascending, pages of \(limit)")
                let descending = try await OwnDataListingTests.pages(api, person, "type=heartRate&limit=\(limit)")
                #expect(descending.compactMap { $0["start"] as? String } == expected.reversed(), "descending, pages of \(limit)")
            }
            let all = try await OwnDataListingTests.pages(api, person, "order=asc&limit=4")
            #expect(all.count == expected.count + 1)  // and the steps

            // A window that starts and ends inside hour blocks.
            let window = try await OwnDataListingTests.pages(
                api, person, "type=heartRate&order=asc&limit=3&from=2023-05-01T10:30:00Z&to=2023-05-01T12:30:00Z")
            #expect(
                window.compactMap { $0["start"] as? String }
                    == expected.filter { $0 >= "2023-05-01T10:30:00.000Z" && $0 < "2023-05-01T12:30:00.000Z" })
            let descendingWindow = try await OwnDataListingTests.pages(
                api, person, "type=heartRate&limit=2&from=2023-05-01T10:30:00Z&to=2023-05-01T12:30:00Z")
            #expect(descendingWindow.count == window.count)

            // Summaries count each sample once: by hour from the blocks, by day from the rollups.
            let hours = try await api.send(
                .get, "/api/users/data/summary?type=heartRate&bucket=hour&from=2023-05-01T10:30:00Z&to=2023-05-01T15:00:00Z", token: person)
            #expect(hours.items.compactMap { $0["count"] as? Int } == [5, 9, 8, 2, 2], "\(hours.json)")
            let days = try await api.send(
                .get, "/api/users/data/summary?type=heartRate&bucket=day&from=2023-04-30T00:00:00Z&to=2023-05-03T00:00:00Z", token: person)
            #expect(days.items.compactMap { $0["count"] as? Int }.reduce(0, +) == expected.count)
        }
    }
}
