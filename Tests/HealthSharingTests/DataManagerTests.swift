import AccessManager
import Data4HelpCore
import DatabaseLink
import DatabaseTestSupport
import Foundation
import HealthSharing
import PostgresNIO
import Synchronization
import Testing

/// Collects what the Data Manager announces.
final class RecordingObserver: StoredDataObserver {
    let batches = Mutex<[StoredDataBatch]>([])
    func dataStored(_ batch: StoredDataBatch) async { batches.withLock { $0.append(batch) } }
    var samples: [NewSample] { batches.withLock { $0.flatMap(\.samples) } }
    var locations: [NewLocationFix] { batches.withLock { $0.flatMap(\.locations) } }
}

@Suite("Data Manager: idempotent ingestion into PostgreSQL")
struct DataManagerTests {
    struct Harness {
        let database: Database
        let manager: DataManager
        let observer: RecordingObserver
        let individual: IndividualID
        let individualId: Int64
    }

    private func withHarness(timeZone: String = "UTC", _ body: @Sendable (Harness) async throws -> Void) async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 6), logger: TestPostgres.logger)
        try await database.whileRunning {
            let record = try await Self.individual(in: database, email: "p@example.org", fiscalCode: "X1234567", timeZone: timeZone)
            let events = StoredDataEvents()
            let observer = RecordingObserver()
            events.register(observer)
            let manager = DataManager(database: database, partitions: PartitionMaintainer(database: database), events: events)
            try await body(
                Harness(
                    database: database, manager: manager, observer: observer,
                    individual: IndividualID(rowId: record.id), individualId: record.id
                ))
        }
    }

    /// A new individual living in `timeZone`.
    static func individual(in database: Database, email: String, fiscalCode: String, timeZone: String) async throws -> IndividualRecord {
        let store = IndividualStore(database: database)
        let record = try await store.insert(
            NewIndividual(
                email: email, passwordHash: "x", fiscalCode: fiscalCode, fullName: "P",
                birthDate: "1950-01-01", sex: "female", homeArea: "IT-MI"
            ))
        var change = IndividualChanges()
        change.timeZone = timeZone
        _ = try await store.update(id: record.id, change)
        return record
    }

    static func heartRate(_ value: Double, at time: String, id: String? = nil) -> RawIngestItem {
        var item = RawIngestItem()
        item.id = id
        item.type = "heartRate"
        item.value = .number(value)
        item.unit = "bpm"
        item.start = RawInstant(time)
        return item
    }

    @Test func resentBatchStoresAndAnnouncesNothingTwice() async throws {
        try await withHarness { h in
            let batch = [
                Self.heartRate(70, at: "2026-11-21T08:00:00Z", id: "s1"),
                Self.heartRate(71, at: "2026-11-21T08:00:01Z"),
                Self.heartRate(71, at: "2026-11-21T08:00:01Z"),  // the same sample twice in one batch
            ]
            let first = try await h.manager.ingest(batch, for: h.individual)
            #expect(first.accepted == 2 && first.duplicates == 1 && first.rejected.isEmpty)
            let second = try await h.manager.ingest(batch, for: h.individual)
            #expect(second.accepted == 0 && second.duplicates == 3)
            #expect(h.observer.samples.count == 2)
            #expect(h.observer.batches.withLock { $0.count } == 1)  // nothing new, nothing announced
            let stored = try await h.database.query("SELECT sum(cardinality(vals))::int FROM sample_blocks")
            #expect(try stored[0].decode(Int.self) == 2)
        }
    }

    @Test func sameClientIdIsTheSameSampleWhateverItsValue() async throws {
        try await withHarness { h in
            _ = try await h.manager.ingest([Self.heartRate(70, at: "2026-11-21T08:00:00Z", id: "x")], for: h.individual)
            let again = try await h.manager.ingest([Self.heartRate(90, at: "2026-11-21T08:00:00Z", id: "x")], for: h.individual)
            #expect(again.duplicates == 1)
        }
    }

    @Test func lateAndOutOfOrderSamplesLandInOrder() async throws {
        try await withHarness { h in
            // Uploaded on the morning they were measured (the rule for an hour's block depends on
            // its age when it arrives: migration 0046).
            let now = try #require(ISO8601DateFormatter().date(from: "2026-11-21T09:00:00Z"))
            _ = try await h.manager.ingest([Self.heartRate(80, at: "2026-11-21T08:00:40Z")], for: h.individual, now: now)
            _ = try await h.manager.ingest(
                [
                    Self.heartRate(60, at: "2026-11-21T08:00:10Z"),
                    Self.heartRate(50, at: "2026-11-18T23:59:59.999Z"),  // three days late
                ], for: h.individual, now: now)
            let block = try await h.database.query(
                """
                SELECT offsets_ms, vals FROM sample_blocks WHERE block_start = '2026-11-21T08:00:00Z'
                """)
            let (offsets, values) = try block[0].decode(([Int32], [Float]).self)
            #expect(offsets == [10_000, 40_000])
            #expect(values == [60, 80])
            // Three days late, its hour is settled and had no block: it starts the hour's block.
            let late = try await h.database.query(
                "SELECT offsets_ms, block_minutes FROM sample_blocks WHERE block_start = '2026-11-18T23:00:00Z'")
            let (lateOffsets, lateMinutes) = try #require(late.first).decode(([Int32], Int16).self)
            #expect(lateOffsets == [3_599_999] && lateMinutes == 60)
        }
    }

    @Test func concurrentOverlappingUploadsStoreEachSampleOnce() async throws {
        try await withHarness { h in
            let items = (0..<120).map { Self.heartRate(60 + Double($0 % 40), at: String(format: "2026-11-21T09:%02d:%02dZ", $0 / 60, $0 % 60)) }
            let results = try await withThrowingTaskGroup(of: IngestBatchResult.self) { group in
                for slice in [items[0..<80], items[40..<120], items[20..<100]] {
                    group.addTask { try await h.manager.ingest(Array(slice), for: h.individual) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.map(\.accepted).reduce(0, +) == 120)
            #expect(h.observer.samples.count == 120)
            #expect(Set(h.observer.samples.map(\.key)).count == 120)
            let stored = try await h.database.query("SELECT sum(cardinality(vals))::int FROM sample_blocks")
            #expect(try stored[0].decode(Int.self) == 120)
        }
    }

    @Test func rollupsFollowTheIndividualsTimeZone() async throws {
        try await withHarness(timeZone: "Europe/Rome") { h in
            _ = try await h.manager.ingest(
                [
                    Self.heartRate(60, at: "2026-11-20T22:30:00Z"),  // 23:30 in Rome: 20 November
                    Self.heartRate(90, at: "2026-11-20T23:30:00Z"),  // 00:30 in Rome: 21 November
                    Self.heartRate(70, at: "2026-11-21T10:00:00Z"),
                ], for: h.individual)
            let rows = try await h.database.query(
                """
                SELECT day::text, sample_count, value_sum, value_min, value_max FROM daily_rollups ORDER BY day
                """)
            let rollups = try rows.map { try $0.decode((String, Int32, Double, Float, Float).self) }
            #expect(rollups.map(\.0) == ["2026-11-20", "2026-11-21"])
            #expect(rollups[0].1 == 1 && rollups[0].2 == 60)
            #expect(rollups[1].1 == 2 && rollups[1].2 == 160 && rollups[1].3 == 70 && rollups[1].4 == 90)
        }
    }

    @Test func locationFixesAreStoredOnceAndAnnounced() async throws {
        try await withHarness { h in
            var fix = RawIngestItem()
            fix.latitude = 45.4642
            fix.longitude = 9.19
            fix.accuracy = 8
            fix.time = "2026-11-21T08:00:00+01:00"
            let first = try await h.manager.ingest([fix, fix], for: h.individual)
            #expect(first.accepted == 1 && first.duplicates == 1)
            #expect(h.observer.locations.map(\.latitude) == [45.4642])
            let rows = try await h.database.query("SELECT recorded_at, accuracy, altitude FROM location_fixes")
            let (time, accuracy, altitude) = try rows[0].decode((Date, Float?, Float?).self)
            #expect(time == RFC3339Timestamp.parse("2026-11-21T07:00:00Z"))
            #expect(accuracy == 8 && altitude == nil)
        }
    }

    @Test func samplesFarInThePastGetTheirPartitionOnDemand() async throws {
        try await withHarness { h in
            let result = try await h.manager.ingest([Self.heartRate(65, at: "2014-05-01T12:00:00Z")], for: h.individual)
            #expect(result.accepted == 1)
            let partition = try await h.database.query("SELECT to_regclass('sample_blocks_201405') IS NOT NULL")
            #expect(try partition[0].decode(Bool.self))
        }
    }

    @Test func erasingTheAccountRemovesEveryRowOfItsData() async throws {
        try await withHarness { h in
            var fix = RawIngestItem()
            fix.latitude = 45
            fix.longitude = 9
            fix.time = "2026-11-21T08:00:00Z"
            _ = try await h.manager.ingest([Self.heartRate(70, at: "2026-11-21T08:00:00Z"), fix], for: h.individual)
            #expect(try await IndividualStore(database: h.database).delete(id: h.individualId))
            let left = try await h.database.query(
                """
                SELECT (SELECT count(*) FROM sample_blocks) + (SELECT count(*) FROM location_fixes)
                     + (SELECT count(*) FROM daily_rollups) + (SELECT count(*) FROM individuals)
                """)
            #expect(try left[0].decode(Int.self) == 0)
        }
    }

    /// Imported history reaches PostgreSQL as ready hour blocks (`HistoryHourBlocks`) where its
    /// hours hold nothing yet, and through the ingest statement where they do. Whatever way, it
    /// must store what an upload of the same items stores: the same blocks, byte for byte, the
    /// same daily rollups, the same counts. One individual imports, another uploads; the batches
    /// mix settled and recent hours, an hour with minute blocks already, instants and intervals,
    /// two sources (days counted again), a category, duplicates within a batch, a time zone
    /// whose days start at half past an hour (Kolkata, +05:30: every hour block is summed sample
    /// by sample) or on the hour (Rome: each block adds its figures whole), and a second batch
    /// that overlaps the first.
    @Test(arguments: ["Asia/Kolkata", "Europe/Rome"])
    func importedHourBlocksStoreWhatAnUploadStores(zone timeZone: String) async throws {
        try await withHarness(timeZone: timeZone) { h in
            let other = try await Self.individual(in: h.database, email: "q@example.org", fiscalCode: "X7654321", timeZone: timeZone)
            let uploader = IndividualID(rowId: other.id)

            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let origin = Date(timeIntervalSince1970: 1_741_600_800)  // 2025-03-10T10:00:00Z
            func at(_ seconds: Double) -> String { formatter.string(from: origin.addingTimeInterval(seconds)) }
            func item(
                _ type: String, _ value: RawSampleValue, unit: String?, at start: Double, lasting: Double? = nil, source: String?, id: String? = nil
            )
                -> RawIngestItem
            {
                var item = RawIngestItem()
                item.id = id
                item.type = RawSampleType(type)
                item.value = value
                item.unit = unit
                item.start = RawInstant(at(start))
                item.end = lasting.map { RawInstant(at(start + $0)) }
                item.source = source
                return item
            }

            // An hour with minute blocks already: uploaded while it was recent (10:00–10:30).
            let early = (0..<20).map { k in item("heartRate", .number(Double(70 + k % 9)), unit: "bpm", at: 90.0 * Double(k), source: "Watch") }
            _ = try await h.manager.ingest(early, for: h.individual, now: origin.addingTimeInterval(3_600))
            _ = try await h.manager.ingest(early, for: uploader, now: origin.addingTimeInterval(3_600))

            // 30 hours from 20 hours before: heart rate every 97 s (some at the same time from the
            // phone, a second source), steps every 10 minutes from both, sleep at night, a
            // repeated id, and the last hours still recent for a `now` just after them.
            var batch: [RawIngestItem] = []
            for k in 0..<1_113 {
                let start = -72_000 + 97.0 * Double(k) + Double(k % 7) * 0.125
                batch.append(item("heartRate", .number(Double(55 + (k * 37) % 60)), unit: "bpm", at: start, source: "Watch"))
                if k % 11 == 0 { batch.append(item("heartRate", .number(Double(61 + k % 5)), unit: "bpm", at: start, source: "iPhone")) }
            }
            for k in 0..<180 {
                let start = -72_000 + 600.0 * Double(k)
                // Some without an end: blocks with durations and without.
                batch.append(
                    item("stepCount", .number(Double(k % 13 * 10)), unit: "count", at: start, lasting: k % 5 == 0 ? nil : 300, source: "iPhone"))
                if k % 3 == 0 {
                    batch.append(item("stepCount", .number(Double(k % 7 * 11)), unit: "count", at: start + 60, lasting: 240, source: "Watch"))
                }
            }
            for k in 0..<12 {
                batch.append(
                    item("sleep", .word(k % 2 == 0 ? "deep" : "rem"), unit: nil, at: -60_000 + 1_800.0 * Double(k), lasting: 1_200, source: "Watch"))
            }
            batch.append(item("heartRate", .number(80), unit: "bpm", at: -50_000, source: "Watch", id: "twice"))
            batch.append(item("heartRate", .number(81), unit: "bpm", at: -50_000, source: "Watch", id: "twice"))
            batch.append(item("heartRate", .number(90), unit: "bpm", at: 30_000, source: nil))
            let now = origin.addingTimeInterval(36_000 + 49 * 3_600)  // the last ~2 hours are not settled
            // The second batch: every third item again, and new ones inside hours the first wrote.
            var second = stride(from: 0, to: batch.count, by: 3).map { batch[$0] }
            for k in 0..<200 {
                second.append(item("heartRate", .number(Double(100 + k % 20)), unit: "bpm", at: -36_000 + 171.0 * Double(k) + 1, source: "Watch"))
            }

            var imported: [(stored: [SampleType: Int], duplicates: [SampleType: Int])] = []
            var uploaded: [IngestBatchResult] = []
            for items in [batch, second] {
                imported.append(
                    try await h.manager.ingestHistory(items, for: h.individual, now: now) { stored, _ in (stored.stored, stored.duplicates) })
                uploaded.append(try await h.manager.ingest(items, for: uploader, now: now))
            }
            for (history, upload) in zip(imported, uploaded) {
                #expect(history.stored.values.reduce(0, +) == upload.accepted)
                #expect(history.duplicates.values.reduce(0, +) == upload.duplicates)
                #expect(upload.rejected.isEmpty)
            }
            // Duplicates in the first batch: the repeated id, and twice the phone's reading at the
            // time and with the value of the watch's (no id: the same sample, whatever its source).
            #expect(imported[0].duplicates[.heartRate] == 3 && imported[1].stored[.heartRate] == 200, "\(imported)")

            func stored(_ individual: Int64) async throws -> (blocks: [String], rollups: [String], sums: [Double]) {
                let blocks = try await h.database.query(
                    """
                    SELECT concat_ws(' ', sample_type, block_start AT TIME ZONE 'UTC', block_minutes, offsets_ms, offsets_s, vals, durations_ms, keys, source_ids, tags)
                    FROM sample_blocks WHERE individual_id = \(individual) ORDER BY sample_type, block_start
                    """
                ).map { try $0.decode(String.self) }
                let rollups = try await h.database.query(
                    """
                    SELECT concat_ws(' ', sample_type, day, sample_count, value_min, value_max, source_ids), value_sum
                    FROM daily_rollups WHERE individual_id = \(individual) ORDER BY sample_type, day
                    """
                ).map { try $0.decode((String, Double).self) }
                return (blocks, rollups.map(\.0), rollups.map(\.1))
            }
            let history = try await stored(h.individualId), upload = try await stored(other.id)
            #expect(history.blocks.count > 60 && history.rollups.count >= 4)
            #expect(history.blocks == upload.blocks)
            #expect(history.rollups == upload.rollups)
            // Sums of float4 values, added in another order (and per hour block, in float8): equal
            // to a few parts in a million.
            #expect(history.sums.count == upload.sums.count)
            for (imported, uploaded) in zip(history.sums, upload.sums) {
                #expect(abs(imported - uploaded) <= 1e-5 * max(1, abs(uploaded)), "\(imported) vs \(uploaded)")
            }
            #expect(history.blocks.contains { $0.contains(",NULL,") })  // a block with an instant among intervals
            // Both kinds of block were written: hours whole, and the minute blocks of the early
            // hour and of the recent end.
            #expect(history.blocks.contains { $0.contains(" 60 ") } && history.blocks.contains { $0.contains(" 1 {") })
        }
    }
}
