import Data4HelpCore
import DatabaseLink
import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import HealthSharing
import PostgresNIO
import Testing

/// Settled history compacted (migration 0046): a database holding minute blocks only — as every
/// database before compaction did, history older than the horizon included — is compacted online
/// by `SampleCompactor`, a pass cut short resumes where it stopped, and every read of the data
/// answers exactly as it did before: the owner's listing in pages of several sizes, both orders,
/// windows starting and ending inside hours, summaries by hour and day, the glucose report, a
/// third party's granted samples and its subscription feed. Uploads into compacted hours are
/// de-duplicated against them as against minute blocks.
@Suite("Compaction of settled minute blocks into hour blocks")
struct SampleCompactionTests {
    /// The start of the UTC day six days ago: the data's first day. Its three days end three days
    /// ago at midnight, behind the 50-hour horizon whatever the time of day (from five days ago,
    /// a run between midnight and 02:00 UTC found the last two hours still inside it).
    static let base = (Date().timeIntervalSince1970 / 86_400).rounded(.down) * 86_400 - 6 * 86_400

    static func at(_ seconds: Double) -> Date { Date(timeIntervalSince1970: base + seconds) }

    /// Three days of a watch's heart rate every 5 minutes with a 1 Hz workout, a phone's every
    /// 10 minutes on the first day, two readings at the same instant at an hour's first
    /// millisecond and one at its last, steps from both over 10-minute intervals, a CGM's glucose
    /// every 5 minutes on the second day, and an hour of heart rate a minute up to an hour ago
    /// (recent: never compacted).
    static func samples() -> SampleColumns {
        let heartRate = SampleType.heartRate.storageCode
        var columns = SampleColumns()
        for k in 0..<(3 * 288) {
            columns.append(
                type: heartRate, start: at(Double(k * 300)), value: Float(55 + k % 40), durationMs: nil,
                key: DedupeKey.forClientId("w\(k)"), source: "Anna's Apple Watch")
        }
        for s in 1..<4_800 {  // the workout, 17:00:01–18:19:59 on the second day: its 8-hour window is dense
            columns.append(
                type: heartRate, start: at(86_400 + 17 * 3_600 + Double(s)), value: Float(120 + s % 50), durationMs: nil,
                key: DedupeKey.forClientId("r\(s)"), source: "Anna's Apple Watch")
        }
        for k in 0..<144 {
            columns.append(
                type: heartRate, start: at(Double(k * 600 + 150)), value: Float(60 + k % 20), durationMs: nil,
                key: DedupeKey.forClientId("p\(k)"), source: "Anna's iPhone")
        }
        for (name, ms) in [("x0", 7_200_000), ("x1", 7_200_000), ("x2", 10_799_999)] {
            columns.append(
                type: heartRate, start: at(Double(ms) / 1000), value: 77, durationMs: nil, key: DedupeKey.forClientId(name),
                source: "Anna's Apple Watch")
        }
        for k in 0..<48 {
            for (source, value) in [("Anna's Apple Watch", 300), ("Anna's iPhone", 280)] {
                columns.append(
                    type: SampleType.stepCount.storageCode, start: at(Double(8 * 3_600 + k * 600)), value: Float(value + k), durationMs: 600_000,
                    key: DedupeKey.forClientId("s\(source.count)-\(k)"), source: source)
            }
        }
        for k in 0..<288 {
            columns.append(
                type: SampleType.bloodGlucose.storageCode, start: at(86_400 + Double(k * 300)), value: Float(90 + (k * 7) % 110), durationMs: nil,
                key: DedupeKey.forClientId("g\(k)"), source: "Anna's CGM")
        }
        let recent = (Date().timeIntervalSince1970 / 60).rounded(.down) * 60 - 2 * 3_600
        for m in 0..<60 {
            columns.append(
                type: heartRate, start: Date(timeIntervalSince1970: recent + Double(m * 60)), value: 70, durationMs: nil,
                key: DedupeKey.forClientId("n\(m)"), source: "Anna's Apple Watch")
        }
        return columns
    }

    static func iso(_ seconds: Double) -> String { WireFormat.timestamp(at(seconds)) }

    /// Every read of the person's data, as the API answers it (items only: cursors are opaque).
    static func reads(_ api: APIClient, person: String, party: String, request: String) async throws -> [String: String] {
        var answers: [String: String] = [:]
        func canonical(_ items: [[String: Any]]) throws -> String {
            String(decoding: try JSONSerialization.data(withJSONObject: items, options: [.sortedKeys]), as: UTF8.self)
        }
        let window = "from=\(iso(2 * 3_600 + 1_800))&to=\(iso(86_400 + 17 * 3_600 + 600))"
        for query in [
            "order=asc&limit=250", "limit=13", "type=heartRate&order=asc&limit=97", "type=heartRate&limit=1000",
            "type=heartRate&order=asc&limit=11&\(window)", "type=heartRate&limit=7&\(window)", "type=stepCount&limit=5",
            "type=bloodGlucose&order=asc&limit=100",
        ] {
            answers["data?\(query)"] = try canonical(try await OwnDataListingTests.pages(api, person, query))
        }
        for query in [
            "type=heartRate&bucket=hour&from=\(iso(0))&to=\(iso(3 * 86_400))", "type=heartRate&bucket=day&from=\(iso(0))&to=\(iso(3 * 86_400))",
            "type=stepCount&bucket=hour&from=\(iso(0))&to=\(iso(86_400))", "type=heartRate&bucket=hour&\(window)",
        ] {
            let reply = try await api.send(.get, "/api/users/data/summary?\(query)", token: person)
            #expect(reply.status == .ok, "summary?\(query)")
            answers["summary?\(query)"] = try canonical(reply.items)
        }
        let glucose = try await api.send(.get, "/api/users/data/glucose?from=\(iso(86_400))&to=\(iso(2 * 86_400))", token: person)
        #expect(glucose.status == .ok)
        answers["glucose"] = String(decoding: glucose.data, as: UTF8.self)
        var granted: [[String: Any]] = [], cursor: String?
        repeat {
            let page = try await api.send(
                .get, "/api/thirdparties/requests/\(request)/data?order=asc&limit=500" + (cursor.map { "&cursor=\($0)" } ?? ""), token: party)
            #expect(page.status == .ok)
            granted += page.items
            cursor = page.json["nextCursor"] as? String
        } while cursor != nil
        answers["granted"] = try canonical(granted)
        let feed = try await api.send(.get, "/api/thirdparties/data", token: party)
        #expect(feed.status == .ok)
        answers["feed"] = try canonical(feed.items)
        return answers
    }

    /// The person's blocks: (type, minutes) → how many, and the samples they hold.
    static func layout(_ database: Database, _ id: Int64) async throws -> (blocks: [String: Int], samples: Int) {
        var blocks: [String: Int] = [:], samples = 0
        for row in try await database.query(
            "SELECT sample_type, block_minutes, count(*)::int8, sum(cardinality(vals))::int8 FROM sample_blocks WHERE individual_id = \(id) GROUP BY 1, 2"
        ) {
            let (type, minutes, count, held) = try row.decode((Int16, Int16, Int64, Int64).self)
            blocks["\(type)/\(minutes)"] = Int(count)
            samples += Int(held)
        }
        return (blocks, samples)
    }

    @Test(.timeLimit(.minutes(20))) func compactedHistoryAnswersEveryReadAsBefore() async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        // Every read pages through the three days (a thousand pages and more): not a test of the
        // rate limit.
        try await TestServer.run(database: url, configure: { $0.rateLimitRequests = 100_000 }) { api in
            let database = Database(configuration: url.clientConfiguration(maximumConnections: 2), logger: TestPostgres.logger)
            try await database.whileRunning {
                // Two people with the same history, in minute blocks (the layout before compaction).
                let (person, party, request) = try await SubscriptionFeedTests.subscribe(
                    api, types: ["heartRate", "stepCount", "bloodGlucose"])
                let (other, _) = try await api.individualSession()
                var ids: [Int64] = []
                for token in [person, other] {
                    let me = try await api.send(.get, "/api/users/me", token: token)
                    let email = try #require(me.string("email"))
                    ids.append(try await database.query("SELECT id FROM individuals WHERE email = \(email)")[0].decode(Int64.self))
                }
                let store = HealthDataStore(database: database, partitions: PartitionMaintainer(database: database))
                let samples = Self.samples()
                for id in ids {
                    let outcome = try await store.ingest(individualId: id, samples: samples, locations: LocationColumns())
                    #expect(outcome.newSamples.count == samples.count)
                }
                let before = try await Self.layout(database, ids[0])
                #expect(before.samples == samples.count && before.blocks.keys.allSatisfy { $0.hasSuffix("/1") }, "\(before)")
                let answers = try await Self.reads(api, person: person, party: party, request: request)
                #expect(answers["granted"]!.count > 100_000 && answers["feed"]!.count > 1_000)

                // A pass cut short after its first batch (one individual) as by a crash; the next
                // resumes after that individual and finishes.
                let compactor = SampleCompactor(
                    database: database, interval: .seconds(3_600), schemaReady: StartupGate(), logger: TestPostgres.logger)
                let first = try #require(try await compactor.pass(batches: 1, batchSize: 1))
                #expect(!first.finished && first.individuals == 1)
                let rest = try #require(try await compactor.pass(batchSize: 1))
                #expect(rest.finished && rest.individuals == 1)
                #expect(first.merged.samples + rest.merged.samples == 2 * (samples.count - 60))

                // Behind the horizon, 8-hour blocks (migration 0050) where a window holds at most
                // 3,600 readings of a type, hour blocks in the workout's window (4,895 heart rates);
                // the recent hour's minute blocks untouched.
                let heartRate = SampleType.heartRate.storageCode
                for id in ids {
                    let after = try await Self.layout(database, id)
                    #expect(after.samples == samples.count)
                    #expect(after.blocks["\(heartRate)/1"] == 60, "\(after)")
                    #expect(after.blocks["\(heartRate)/480"] == 8 && after.blocks["\(heartRate)/60"] == 8, "\(after)")
                    #expect(after.blocks["\(SampleType.bloodGlucose.storageCode)/480"] == 3, "\(after)")
                    #expect(after.blocks["\(SampleType.stepCount.storageCode)/480"] == 1, "\(after)")
                    #expect(after.blocks.count == 5, "\(after)")
                }

                // Every read as before.
                let compacted = try await Self.reads(api, person: person, party: party, request: request)
                #expect(compacted.keys.sorted() == answers.keys.sorted())
                for (read, answer) in answers.sorted(by: { $0.key < $1.key }) {
                    let now = compacted[read] ?? ""
                    let same = now == answer
                    let at = zip(now, answer).prefix { $0 == $1 }.count
                    #expect(
                        same,
                        "\(read) differs after compaction from character \(at): \(now.dropFirst(at).prefix(160)) — was \(answer.dropFirst(at).prefix(160))"
                    )
                }

                // The same readings uploaded again are duplicates, into 8-hour blocks as into minute
                // blocks; a new one joins its 8-hour block.
                let again: [any Sendable] = [
                    ["id": "w3", "type": "heartRate", "value": 58, "start": Self.iso(900), "source": "Anna's Apple Watch"] as JSONObject,
                    ["id": "x1", "type": "heartRate", "value": 77, "start": Self.iso(7_200), "source": "Anna's Apple Watch"] as JSONObject,
                    ["id": "late", "type": "heartRate", "value": 88, "start": Self.iso(7_201), "source": "Anna's Apple Watch"] as JSONObject,
                ]
                let uploaded = try await api.send(.post, "/api/users/data", token: person, json: ["items": again])
                #expect(uploaded.json["accepted"] as? Int == 1 && uploaded.json["duplicates"] as? Int == 2, "\(uploaded.json)")
                let layout = try await Self.layout(database, ids[0])
                #expect(
                    layout.samples == samples.count + 1 && layout.blocks["\(heartRate)/480"] == 8 && layout.blocks["\(heartRate)/60"] == 8,
                    "\(layout)")

                // Nothing left to merge: the next pass finds no one.
                let idle = try #require(try await compactor.pass())
                #expect(idle.finished && idle.individuals == 0)
            }
        }
    }
}

/// Settled blocks without keys (migration 0049): a database whose hour blocks still hold 64-bit
/// keys, as every one did before, and whose events name samples by client key, is moved to tags
/// by the compactor's pass, online, and every read answers as before it: the listing, summaries,
/// the glucose report, the granted samples and the subscription feed of events written before.
@Suite("Settled hour blocks without keys")
struct KeylessHourBlockTests {
    @Test(.timeLimit(.minutes(20))) func hourBlocksWithKeysAreMovedAndAnswerAsBefore() async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        // Three rounds of every read: more pages than the default limit allows a minute.
        try await TestServer.run(database: url, configure: { $0.rateLimitRequests = 10_000 }) { api in
            let database = Database(configuration: url.clientConfiguration(maximumConnections: 2), logger: TestPostgres.logger)
            try await database.whileRunning {
                let (person, party, request) = try await SubscriptionFeedTests.subscribe(
                    api, types: ["heartRate", "stepCount", "bloodGlucose"])
                let me = try await api.send(.get, "/api/users/me", token: person)
                let email = try #require(me.string("email"))
                let id = try await database.query("SELECT id FROM individuals WHERE email = \(email)")[0].decode(Int64.self)
                let samples = SampleCompactionTests.samples()
                let store = HealthDataStore(database: database, partitions: PartitionMaintainer(database: database))
                let outcome = try await store.ingest(individualId: id, samples: samples, locations: LocationColumns())
                #expect(outcome.newSamples.count == samples.count)
                let answers = try await SampleCompactionTests.reads(api, person: person, party: party, request: request)
                #expect(answers["feed"]!.count > 1_000)

                // The layout before migration 0049: the events name samples by client key, and
                // the settled hours are hour blocks with keys, as the compactor wrote them then.
                let events = try await database.query(
                    """
                    WITH renamed AS (
                        UPDATE party_events e SET keys = (
                            SELECT array_agg(u.key) FROM sample_blocks b
                            CROSS JOIN LATERAL unnest(b.offsets_ms, b.keys) AS u(offset_ms, key)
                            WHERE b.individual_id = e.individual_id
                              AND data4help_event_key(
                                      (extract(epoch FROM b.block_start) * 1000)::int8 + u.offset_ms, data4help_key_tag(u.key)) = ANY (e.keys))
                        WHERE e.individual_id = \(id) AND e.keys IS NOT NULL
                        RETURNING e.id, cardinality(e.keys) AS n
                    )
                    SELECT count(*)::int8, coalesce(sum(n), 0)::int8 FROM renamed
                    """)[0].decode((Int64, Int64).self)
                #expect(events.0 >= 1 && events.1 == Int64(samples.count), "\(events)")
                try await database.query("UPDATE sample_compaction SET client_keyed_events_before = (SELECT max(id) + 1 FROM party_events)")
                let cut = Date(timeIntervalSince1970: SampleCompactionTests.base + 3 * 86_400)
                try await database.query(
                    """
                    WITH gone AS (
                        DELETE FROM sample_blocks b WHERE b.individual_id = \(id) AND b.block_start < \(cut)
                        RETURNING b.sample_type, b.block_start, b.offsets_ms, b.vals, b.durations_ms, b.keys, b.source_ids
                    ),
                    s AS (
                        SELECT g.sample_type, date_bin('1 hour', g.block_start, 'epoch') AS hour,
                               e.offset_ms + (extract(epoch FROM g.block_start - date_bin('1 hour', g.block_start, 'epoch')) * 1000)::int4 AS offset_ms,
                               e.val, e.duration_ms, e.key, COALESCE(e.source_id, 0) AS source_id
                        FROM gone g
                        CROSS JOIN LATERAL unnest(g.offsets_ms, g.vals, g.durations_ms, g.keys, g.source_ids)
                            AS e(offset_ms, val, duration_ms, key, source_id)
                    )
                    INSERT INTO sample_blocks (individual_id, sample_type, block_start, block_minutes, offsets_ms, vals, durations_ms, keys, source_ids)
                    SELECT \(id), sample_type, hour, 60, array_agg(offset_ms ORDER BY offset_ms, key), array_agg(val ORDER BY offset_ms, key),
                           CASE WHEN bool_and(duration_ms IS NULL) THEN NULL ELSE array_agg(duration_ms ORDER BY offset_ms, key) END,
                           array_agg(key ORDER BY offset_ms, key),
                           CASE WHEN bool_and(source_id = 0) THEN NULL ELSE array_agg(source_id ORDER BY offset_ms, key) END
                    FROM s GROUP BY sample_type, hour
                    """)
                let old = try await Self.keyed(database, id)
                #expect(old.withKeys == 104 && old.withTags == 0, "\(old)")
                let oldAnswers = try await SampleCompactionTests.reads(api, person: person, party: party, request: request)
                for (read, answer) in answers.sorted(by: { $0.key < $1.key }) {
                    #expect(oldAnswers[read] == answer, "\(read) differs in the layout before migration 0049")
                }

                // The compactor's pass moves every hour block to tags, in 8-hour blocks where
                // their window is sparse (migration 0050: 12 windows; the workout's stays in 8 hour
                // blocks); the recent minute blocks keep their keys.
                let compactor = SampleCompactor(
                    database: database, interval: .seconds(3_600), schemaReady: StartupGate(), logger: TestPostgres.logger)
                let pass = try #require(try await compactor.pass())
                #expect(
                    pass.finished && pass.merged.eightHourBlocks == 12 && pass.merged.hourBlocks == 8 && pass.merged.blocksReplaced == 104
                        && pass.merged.samples == samples.count - 60, "\(pass)")
                let moved = try await Self.keyed(database, id)
                // Every block but one in whole seconds (migration 0050): the 8-hour block of the
                // reading at 10,799,999 ms keeps its offsets in milliseconds.
                #expect(
                    moved.withKeys == 0 && moved.withTags == 20 && moved.eightHours == 12 && moved.minuteBlocks == 60 && moved.inSeconds == 19,
                    "\(moved)")
                let layout = try await SampleCompactionTests.layout(database, id)
                #expect(layout.samples == samples.count)
                let now = try await SampleCompactionTests.reads(api, person: person, party: party, request: request)
                for (read, answer) in answers.sorted(by: { $0.key < $1.key }) {
                    let moved = now[read] ?? ""
                    let at = zip(moved, answer).prefix { $0 == $1 }.count
                    #expect(
                        moved == answer,
                        "\(read) differs without keys from character \(at): \(moved.dropFirst(at).prefix(160)) — was \(answer.dropFirst(at).prefix(160))"
                    )
                }

                // Sent again, the same readings are duplicates; the same client id for the same
                // instant and source too, whatever its value; a new reading joins its block.
                let again: [any Sendable] = [
                    ["id": "w3", "type": "heartRate", "value": 58, "start": SampleCompactionTests.iso(900), "source": "Anna's Apple Watch"]
                        as JSONObject,
                    ["id": "x0", "type": "heartRate", "value": 99, "start": SampleCompactionTests.iso(7_200), "source": "Anna's Apple Watch"]
                        as JSONObject,
                    ["id": "g7", "type": "bloodGlucose", "value": 139, "start": SampleCompactionTests.iso(86_400 + 2_100), "source": "Anna's CGM"]
                        as JSONObject,
                    ["id": "late", "type": "heartRate", "value": 88, "start": SampleCompactionTests.iso(7_201), "source": "Anna's Apple Watch"]
                        as JSONObject,
                ]
                let uploaded = try await api.send(.post, "/api/users/data", token: person, json: ["items": again])
                #expect(uploaded.json["accepted"] as? Int == 1 && uploaded.json["duplicates"] as? Int == 3, "\(uploaded.json)")
                let after = try await Self.keyed(database, id)
                #expect(after.withKeys == 0 && after.withTags == 20 && after.inSeconds == 19, "\(after)")

                // A second pass finds nothing to move.
                let idle = try #require(try await compactor.pass())
                #expect(idle.finished && idle.individuals == 0)

                // The layout between migrations 0049 and 0050: hour blocks without keys, offsets in
                // milliseconds. Every read answers as in seconds; the pass after the migration's
                // reset moves the blocks back to seconds.
                let inSeconds = try await SampleCompactionTests.reads(api, person: person, party: party, request: request)
                try await database.query(
                    """
                    UPDATE sample_blocks SET offsets_ms = ARRAY(SELECT s * 1000 FROM unnest(offsets_s) AS s), offsets_s = NULL
                    WHERE individual_id = \(id) AND offsets_s IS NOT NULL
                    """)
                try await database.query("UPDATE sample_compaction SET compacted_before = '-infinity', pass_before = NULL, pass_after = 0")
                #expect(try await Self.keyed(database, id).inSeconds == 0)
                #expect(try await SampleCompactionTests.reads(api, person: person, party: party, request: request) == inSeconds)
                let back = try #require(try await compactor.pass())
                #expect(back.finished && back.merged.eightHourBlocks == 11 && back.merged.hourBlocks == 8, "\(back)")
                let final = try await Self.keyed(database, id)
                #expect(final.withKeys == 0 && final.withTags == 20 && final.eightHours == 12 && final.inSeconds == 19, "\(final)")
                #expect(try await SampleCompactionTests.reads(api, person: person, party: party, request: request) == inSeconds)

                // Dense readings uploaded into a sparse window's 8-hour block (4,000 a second apart
                // from 04:00 on the first day) grow it past 3,600: the next pass puts that window
                // back into hour blocks, and leaves the sparse ones alone.
                var dense = SampleColumns()
                for second in 0..<4_000 {
                    dense.append(
                        type: SampleType.heartRate.storageCode, start: SampleCompactionTests.at(Double(4 * 3_600 + second)), value: 70,
                        durationMs: nil, key: DedupeKey.forClientId("d\(second)"), source: "Anna's Apple Watch")
                }
                let grown = try await store.ingest(individualId: id, samples: dense, locations: LocationColumns())
                #expect(grown.newSamples.count == 4_000)
                try await database.query("UPDATE sample_compaction SET compacted_before = '-infinity', pass_before = NULL, pass_after = 0")
                let split = try #require(try await compactor.pass())
                // 16 hour blocks: the split window's 8, and the workout's window again (its sparse
                // hours make it a window to look at on every pass that covers it; dense, it stays
                // in hour blocks).
                #expect(split.finished && split.merged.eightHourBlocks == 0 && split.merged.hourBlocks == 16, "\(split)")
                let last = try await Self.keyed(database, id)
                #expect(last.eightHours == 11 && last.withTags == 27 && last.withKeys == 0, "\(last)")
                #expect(try await SampleCompactionTests.layout(database, id).samples == samples.count + 1 + 4_000)
            }
        }
    }

    /// The person's hour blocks with keys, with tags, and minute blocks.
    static func keyed(
        _ database: Database, _ id: Int64
    ) async throws -> (
        withKeys: Int, withTags: Int, minuteBlocks: Int, inSeconds: Int, eightHours: Int
    ) {
        let row = try await database.query(
            """
            SELECT count(*) FILTER (WHERE block_minutes > 1 AND keys IS NOT NULL)::int8,
                   count(*) FILTER (WHERE block_minutes > 1 AND tags IS NOT NULL AND keys IS NULL)::int8,
                   count(*) FILTER (WHERE block_minutes = 1 AND keys IS NOT NULL AND tags IS NULL)::int8,
                   count(*) FILTER (WHERE offsets_s IS NOT NULL)::int8,
                   count(*) FILTER (WHERE block_minutes = 480)::int8,
                   count(*) FILTER (WHERE (offsets_s IS NULL) = (offsets_ms IS NULL))::int8
            FROM sample_blocks WHERE individual_id = \(id)
            """)[0].decode((Int64, Int64, Int64, Int64, Int64, Int64).self)
        #expect(row.5 == 0, "blocks with both offset columns or neither")
        return (Int(row.0), Int(row.1), Int(row.2), Int(row.3), Int(row.4))
    }
}
