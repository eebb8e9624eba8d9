import Data4HelpCore
import DatabaseLink
import DatabaseTestSupport
import Foundation
import PostgresNIO
import Testing

@Suite("A runner's post: the course only when the server does not hold it, and no update lost between posts")
struct RunPositionCourseTests {
    /// An event starting in an hour with `runners` runners enrolled: the event and the runners' ids.
    static func enrolled(_ database: Database, runners: Int) async throws -> (event: RunEventRecord, runners: [Int64]) {
        let ids = try await database.query(
            """
            INSERT INTO individuals (email, password_hash, fiscal_code, full_name, birth_date, sex, home_area)
            SELECT 'course' || n || '@test.invalid', '!', 'COURSE' || lpad(n::text, 10, '0'), 'Runner ' || n, date '1990-01-01', 'other', 'IT-MI'
            FROM generate_series(1, \(1 + runners)) AS n
            ORDER BY n
            RETURNING id
            """
        ).map { try $0.decode(Int64.self) }
        let now = Date()
        let events = RunEventStore(database: database)
        let event = try await events.create(
            organiserId: ids[0],
            RunEventDraft(
                name: "Course", description: "", startsAt: now.addingTimeInterval(3_600), endsAt: now.addingTimeInterval(7_200),
                enrolmentDeadline: now.addingTimeInterval(3_600), maxParticipants: runners, path: path, lengthMeters: 2_502))
        for runner in ids.dropFirst() {
            _ = try await events.enrol(publicId: event.publicId, individualId: runner, displayName: "R\(runner)") { _ in }
        }
        return (event, Array(ids.dropFirst()))
    }

    /// An event with one runner enrolled.
    static func enrolled(_ database: Database) async throws -> (event: RunEventRecord, runner: Int64) {
        let (event, runners) = try await enrolled(database, runners: 1)
        return (event, runners[0])
    }

    static let path = "[[9.1725,45.4755],[9.1725,45.498]]"

    /// A write of one metre more and a fix at `second` (after 1_800_000_000), the state's last
    /// fix at least that (the store's contract).
    static func aMetreAndAFix(at second: Int, after state: RunnerStateRecord) -> RunPositionWrite {
        var next = state
        next.distanceMeters += 1
        let time = Date(timeIntervalSince1970: 1_800_000_000 + Double(second))
        next.lastFixAt = max(state.lastFixAt ?? time, time)
        let fix = RunPositionRecord(
            timeMs: 1_800_000_000_000 + Int64(second) * 1_000, latitude: 45.48, longitude: 9.1725, accuracy: nil, distanceMeters: 1,
            offsetMeters: 0)
        return RunPositionWrite(positions: [fix], state: next, dropped: 0, announcement: nil)
    }

    @Test func thePathComesOnlyForAnotherVersion() async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 2), logger: TestPostgres.logger)
        try await database.whileRunning {
            let (event, runner) = try await Self.enrolled(database)
            let path = Self.path
            let store = RunPositionStore(database: database)

            /// The path and version the post's statement read, writing nothing.
            func read(holding known: Int64?) async throws -> (path: String, version: Int64) {
                var seen: (String, Int64)?
                _ = try await store.apply(publicId: event.publicId, individualId: runner, knownCourse: known) { event, state, _, version in
                    seen = (event.path, version)
                    return RunPositionWrite(positions: [], state: state, dropped: 0, announcement: nil)
                }
                return try #require(seen)
            }

            let first = try await read(holding: nil)
            #expect(first.path.filter { !$0.isWhitespace } == path, "a server that holds no course gets it")
            let again = try await read(holding: first.version)
            #expect(again.path.isEmpty, "the course the server holds is not sent again")
            #expect(again.version == first.version)
            let other = try await read(holding: first.version - 1)
            #expect(other.path.filter { !$0.isWhitespace } == path, "an older course held: the current one is sent")

            // A change of the event is a new version: the course the server held is stale.
            _ = try await database.query(
                "UPDATE run_events SET updated_at = updated_at + interval '1 microsecond' WHERE id = \(event.id)")
            let changed = try await read(holding: first.version)
            #expect(changed.version == first.version + 1, "microseconds, exact")
            #expect(!changed.path.isEmpty)
        }
    }

    /// Posts of one runner at once: each reads the state without a lock and writes it back only
    /// if nobody wrote it meanwhile, else goes again with the row locked. Each post here adds one
    /// metre and one fix: a post that wrote over another's state would leave fewer metres than
    /// posts. Like `LivePositions`, each write's state has a last fix at least as new as its
    /// positions (the store's contract: a runner with no last fix has no stored position).
    @Test func concurrentPostsOfOneRunnerLoseNoUpdate() async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 6), logger: TestPostgres.logger)
        try await database.whileRunning {
            let (event, runner) = try await Self.enrolled(database)
            let store = RunPositionStore(database: database)
            let posts = 40
            let stored = try await withThrowingTaskGroup(of: Int.self) { group in
                for post in 0..<posts {
                    group.addTask {
                        try await store.apply(publicId: event.publicId, individualId: runner, knownCourse: nil) { _, state, _, _ in
                            Self.aMetreAndAFix(at: post, after: state)
                        }.stored
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(stored == posts)
            let row = try await database.query(
                "SELECT distance_meters, dropped_fixes, (SELECT count(*) FROM run_positions WHERE run_id = \(event.id)) FROM run_participants WHERE run_id = \(event.id)"
            )[0].decode((Double, Int32, Int64).self)
            #expect(row.0 == Double(posts), "every post's metre counted")
            #expect(row.1 == 0)
            #expect(row.2 == Int64(posts))

            // The same fix again is stored once and counted as dropped.
            let again = try await store.apply(publicId: event.publicId, individualId: runner, knownCourse: nil) { _, state, _, _ in
                let fix = RunPositionRecord(
                    timeMs: 1_800_000_000_000, latitude: 45.48, longitude: 9.1725, accuracy: nil, distanceMeters: 1, offsetMeters: 0)
                return RunPositionWrite(positions: [fix], state: state, dropped: 0, announcement: nil)
            }
            #expect(again.stored == 0)
            let dropped = try await database.query("SELECT dropped_fixes FROM run_participants WHERE run_id = \(event.id)")[0].decode(Int32.self)
            #expect(dropped == 1)

            // Once the state has a last fix, a stored fix older than it (a late resend) still
            // counts as dropped, and a fix after it is new.
            let last = Date(timeIntervalSince1970: 1_800_000_000 + Double(posts))
            func post(_ second: Int) async throws -> Int {
                try await store.apply(publicId: event.publicId, individualId: runner, knownCourse: nil) { _, state, _, _ in
                    var next = state
                    next.lastFixAt = max(last, Date(timeIntervalSince1970: 1_800_000_000 + Double(second)))
                    let fix = RunPositionRecord(
                        timeMs: 1_800_000_000_000 + Int64(second) * 1_000, latitude: 45.48, longitude: 9.1725, accuracy: nil,
                        distanceMeters: 1, offsetMeters: 0)
                    return RunPositionWrite(positions: [fix], state: next, dropped: 0, announcement: nil)
                }.stored
            }
            #expect(try await post(posts) == 1, "a new fix")
            #expect(try await post(posts) == 0, "the last fix again")
            #expect(try await post(3) == 0, "a late resend")
            let counted = try await database.query("SELECT dropped_fixes FROM run_participants WHERE run_id = \(event.id)")[0].decode(Int32.self)
            #expect(counted == 3)
        }
    }

    /// A runner's next post on the instance that wrote their row last is decided from what that
    /// instance held, with no read, and the write confirms it. A post written meanwhile by another
    /// instance, any change of the event's row, and a withdrawal make the write refuse it: the
    /// post is then read and decided afresh — the other instance's update kept, the change seen,
    /// the refusal given from what was read.
    @Test func aRunnersNextPostIsDecidedFromWhatThisInstanceHeldAndTheWriteConfirmsIt() async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 4), logger: TestPostgres.logger)
        try await database.whileRunning {
            let (event, runner) = try await Self.enrolled(database)
            let here = RunPositionStore(database: database)
            let there = RunPositionStore(database: database)  // another instance
            var course: Int64?
            var seen: [(state: RunnerStateRecord, version: Int64, description: String, now: Date, here: Date)] = []

            /// A metre and a fix at `second` (the state's last fix at least that); refused, as
            /// `LivePositions` refuses it, on a cancelled event.
            func post(_ second: Int, on store: RunPositionStore) async throws -> Int {
                try await store.apply(publicId: event.publicId, individualId: runner, knownCourse: course) { event, state, now, version in
                    seen.append((state, version, event.description, now, Date()))
                    guard event.cancelledAt == nil else { throw RunRefusal.cancelled }
                    return Self.aMetreAndAFix(at: second, after: state)
                }.stored
            }
            func row() async throws -> (distance: Double, dropped: Int32, positions: Int64) {
                try await database.query(
                    """
                    SELECT distance_meters, dropped_fixes, (SELECT count(*) FROM run_positions WHERE run_id = \(event.id))
                    FROM run_participants WHERE run_id = \(event.id)
                    """
                )[0].decode((Double, Int32, Int64).self)
            }

            let sent = Date()
            #expect(try await post(1, on: here) == 1, "nothing held yet: read")
            let readTook = Date().timeIntervalSince(sent)
            course = seen.last?.version
            let reads = here.statements.reads
            #expect(try await post(2, on: here) == 1)
            #expect(try await post(3, on: here) == 1)
            #expect(here.statements.reads == reads, "held: decided with no read")
            #expect(seen.last?.state.lastFixAt == Date(timeIntervalSince1970: 1_800_000_002), "the state as this instance wrote it")
            // Both clocks are this machine's: the estimate is off by at most half the read's round trip.
            let estimated = try #require(seen.last)
            #expect(abs(estimated.now.timeIntervalSince(estimated.here)) <= readTook / 2 + 0.01, "the database's time, estimated")

            // Another instance writes the runner: the held row is stale, its write refused.
            #expect(try await post(4, on: there) == 1)
            var decisions = seen.count
            #expect(try await post(5, on: here) == 1)
            #expect(here.statements.reads == reads + 1)
            #expect(seen.count == decisions + 2, "decided on what was held, then on what was read")
            #expect(seen.last?.state.distanceMeters == 4, "the other instance's metre kept")

            // The same fix again is stored once; the dropped count held is the row's.
            #expect(try await post(5, on: here) == 0)
            #expect(try await post(6, on: here) == 1)
            #expect(seen.last?.state.droppedFixes == 1)
            #expect(here.statements.reads == reads + 1)

            // Any change of the event's row, the course the same: refused, read afresh.
            _ = try await database.query("UPDATE run_events SET description = 'changed' WHERE id = \(event.id)")
            decisions = seen.count
            #expect(try await post(7, on: here) == 1)
            #expect(seen.count == decisions + 2 && seen.last?.description == "changed")
            #expect(here.statements.reads == reads + 2)

            // Cancelled: what was held says under way, the write refuses it, the read refuses the post.
            _ = try await database.query("UPDATE run_events SET cancelled_at = now() WHERE id = \(event.id)")
            await #expect(throws: RunRefusal.cancelled) { try await post(8, on: here) }
            #expect(try await row() == (8, 1, 7), "nothing written")
            _ = try await database.query("UPDATE run_events SET cancelled_at = NULL WHERE id = \(event.id)")
            #expect(try await post(8, on: here) == 1)
            #expect(try await post(9, on: here) == 1)

            // Withdrawn: refused as not enrolled.
            _ = try await database.query("DELETE FROM run_participants WHERE run_id = \(event.id) AND individual_id = \(runner)")
            await #expect(throws: RunRefusal.notEnrolled) { try await post(10, on: here) }
        }
    }

    /// The store's contract is checked, not only stated: a write whose positions are newer than
    /// its state's last fix (or that has none) is refused before anything is written, on the
    /// optimistic path and on the locked one (a finishing batch goes through the lock).
    @Test func writeWithPositionsNewerThanItsLastFixIsRefused() async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 2), logger: TestPostgres.logger)
        try await database.whileRunning {
            let (event, runner) = try await Self.enrolled(database)
            let store = RunPositionStore(database: database)
            let fix = RunPositionRecord(
                timeMs: 1_800_000_001_000, latitude: 45.48, longitude: 9.1725, accuracy: nil, distanceMeters: 1, offsetMeters: 0)
            for lastFix in [nil, Date(timeIntervalSince1970: 1_800_000_000.999)] {
                for finishing in [false, true] {
                    let error = await #expect(throws: RunPositionWrite.ContractViolation.self) {
                        try await store.apply(publicId: event.publicId, individualId: runner, knownCourse: nil) { _, state, now, _ in
                            var next = state
                            next.lastFixAt = lastFix
                            next.distanceMeters = 1
                            if finishing { next.finishedAt = now }
                            let workout = finishing ? NewWorkout(clientId: "run", activity: "running", start: now, end: now) : nil
                            return RunPositionWrite(positions: [fix], state: next, dropped: 0, announcement: nil, finishedWorkout: workout)
                        }
                    }
                    #expect(error?.newestPositionMs == 1_800_000_001_000)
                    #expect(error?.lastFixMs == lastFix.map { _ in 1_800_000_000_999 })
                }
            }
            let row = try await database.query(
                "SELECT distance_meters, last_fix_at IS NULL, (SELECT count(*) FROM run_positions WHERE run_id = \(event.id)) FROM run_participants WHERE run_id = \(event.id)"
            )[0].decode((Double, Bool, Int64).self)
            #expect(row.0 == 0 && row.1 && row.2 == 0, "nothing written")

            // At the last fix exactly, the write goes through.
            let stored = try await store.apply(publicId: event.publicId, individualId: runner, knownCourse: nil) { _, state, _, _ in
                var next = state
                next.lastFixAt = Date(timeIntervalSince1970: 1_800_000_001)
                return RunPositionWrite(positions: [fix], state: next, dropped: 0, announcement: nil)
            }.stored
            #expect(stored == 1)
        }
    }

    /// Replay pages, walked with every page size from 1 up, give the run's positions exactly once
    /// each in (time, runner) order — ties of many runners at one time across a page's start or
    /// end included — for the whole run, one runner, and a time window.
    @Test func replayPagesGiveEveryPositionOnceInOrder() async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 2), logger: TestPostgres.logger)
        try await database.whileRunning {
            let (event, individuals) = try await Self.enrolled(database, runners: 5)
            let base: Int64 = 1_800_000_000_000
            // Runner k has a position at second t unless (t + k) % 3 == 0: up to five at one time.
            try await database.query(
                """
                INSERT INTO run_positions (run_id, individual_id, recorded_at, latitude, longitude, distance_meters, offset_meters)
                SELECT \(event.id), i, 'epoch'::timestamptz + (\(base) + t * 1000) * interval '1 millisecond', 45.48, 9.1725, t, 0
                FROM unnest(\(individuals)::int8[]) WITH ORDINALITY AS r(i, k), generate_series(0, 11) AS t
                WHERE (t + k) % 3 <> 0
                """)
            let runnerIds = try await database.query("SELECT runner_id FROM run_participants WHERE run_id = \(event.id)").map {
                try $0.decode(UUID.self)
            }
            let all = try await database.query(
                """
                SELECT (extract(epoch FROM r.recorded_at) * 1000)::int8, p.runner_id FROM run_positions r
                JOIN run_participants p ON p.run_id = r.run_id AND p.individual_id = r.individual_id
                WHERE r.run_id = \(event.id) ORDER BY 1, 2
                """
            ).map { try $0.decode((Int64, UUID).self) }
            #expect(all.count == 40)
            let store = RunPositionStore(database: database)
            let cases: [(runner: UUID?, fromMs: Int64?, toMs: Int64?)] = [
                (nil, nil, nil), (runnerIds[1], nil, nil), (nil, base + 3_000, base + 9_000),
            ]
            for (runner, fromMs, toMs) in cases {
                let expected = all.filter { time, id in
                    (runner == nil || id == runner) && time >= (fromMs ?? .min) && time < (toMs ?? .max)
                }.map { "\($0.0)|\($0.1)" }
                for limit in [1, 2, 3, 4, 5, 7, 100] {
                    var walked: [String] = [], after: (timeMs: Int64, runnerId: UUID)?
                    while walked.count <= all.count {
                        let page = try await store.positions(
                            runId: event.id, runnerId: runner, fromMs: fromMs, toMs: toMs, after: after, limit: limit)
                        walked += page.map { "\($0.position.timeMs)|\($0.runnerId)" }
                        guard page.count == limit, let last = page.last else { break }
                        after = (last.position.timeMs, last.runnerId)
                    }
                    #expect(
                        walked == expected, "runner \(runner.map { "\($0)" } ?? "any"), from \(fromMs.map { "\($0)" } ?? "start"), pages of \(limit)")
                }
            }
        }
    }

    /// Many runners' posts at once go in shared statements (`StatementCoalescer`), and each
    /// runner's row gets their own state, NULLs included, and their own positions; a stale
    /// version in the same statement as fresh ones writes nothing of its own.
    @Test func postsOfManyRunnersAtOnceShareStatementsAndEachWritesItsOwn() async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 4), logger: TestPostgres.logger)
        try await database.whileRunning {
            let (event, runners) = try await Self.enrolled(database, runners: 60)
            let store = RunPositionStore(database: database)
            let start = Date(timeIntervalSince1970: 1_800_000_000.25)  // exact in microseconds and in binary

            /// Runner `index`'s state: every field set from the index, NULL where the index says.
            func state(_ index: Int, from read: RunnerStateRecord) -> RunnerStateRecord {
                var state = read
                let time = start.addingTimeInterval(Double(index) * 1.5)
                state.lastFixAt = index % 3 == 0 ? nil : time
                state.latitude = index % 3 == 0 ? nil : 45 + Double(index) / 1_000
                state.longitude = index % 3 == 0 ? nil : 9 + Double(index) / 7_000
                state.distanceMeters = Double(index) * 10.25
                state.firstFixAt = index % 3 == 0 ? nil : start
                state.offCourse = index % 2 == 0
                state.finishedAt = index % 5 == 0 ? time : nil
                return state
            }
            /// None for a runner with no last fix, the rest at or before it (the store's contract).
            func positions(_ index: Int) -> [RunPositionRecord] {
                (0..<(index % 3 == 0 ? 0 : index % 4)).map { n in
                    RunPositionRecord(
                        timeMs: 1_800_000_000_000 + Int64(n) * 1_000, latitude: 45.48, longitude: 9.1725 + Double(index) / 1e4,
                        accuracy: n == 1 ? nil : Float(index), distanceMeters: Double(n), offsetMeters: Float(n) / 2)
                }
            }

            let stored = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
                for (index, runner) in runners.enumerated() {
                    group.addTask {
                        let applied = try await store.apply(publicId: event.publicId, individualId: runner, knownCourse: nil) { _, read, _, _ in
                            RunPositionWrite(positions: positions(index), state: state(index, from: read), dropped: index % 2, announcement: nil)
                        }
                        return (index, applied.stored)
                    }
                }
                return try await group.reduce(into: [Int: Int]()) { $0[$1.0] = $1.1 }
            }
            for index in runners.indices { #expect(stored[index] == positions(index).count, "runner \(index)") }
            let statements = store.statements
            #expect(statements.writes < runners.count, "\(runners.count) posts at once in \(statements.writes) write statements")
            #expect(statements.reads < runners.count, "\(runners.count) posts at once in \(statements.reads) read statements")

            let rows = try await store.states(runId: event.id)
            #expect(rows.count == runners.count)
            let dropped = try await database.query(
                "SELECT individual_id, dropped_fixes FROM run_participants WHERE run_id = \(event.id)"
            ).reduce(into: [Int64: Int32]()) {
                let row = try $1.decode((Int64, Int32).self); $0[row.0] = row.1
            }
            for (index, runner) in runners.enumerated() {
                let row = try #require(rows.first { $0.displayName == "R\(runner)" })
                var expected = state(index, from: row)
                expected.droppedFixes = row.droppedFixes
                #expect(row == expected, "runner \(index)")
                #expect(dropped[runner] == Int32(index % 2), "runner \(index)")
                let count = try await database.query(
                    "SELECT count(*) FROM run_positions WHERE run_id = \(event.id) AND individual_id = \(runner)")[0].decode(Int64.self)
                #expect(count == Int64(positions(index).count), "runner \(index)")
            }
        }
    }
}

/// Migration 0053: a position belongs to its enrolment (one foreign key to `run_participants`
/// where there were one to the event and one to the individual), on a database holding positions
/// in the layout before it, a withdrawn runner's among them.
@Suite struct RunPositionEnrolmentKeyTests {
    @Test func positionsLeftByAWithdrawalGoTheOthersStayAndNewOnesNeedAnEnrolment() async throws {
        let url = try await TestPostgres.shared.emptyDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 2), logger: TestPostgres.logger)
        try await database.whileRunning {
            let all = try MigrationSet(directory: TestPostgres.migrationsDirectory)
            try await Migrator(database: database, migrations: try MigrationSet(files: all.files.filter { $0.version < 53 })).migrate()
            let (event, runners) = try await RunPositionCourseTests.enrolled(database, runners: 3)
            for runner in runners {
                try await database.query(
                    """
                    INSERT INTO run_positions (run_id, individual_id, recorded_at, latitude, longitude, distance_meters, offset_meters)
                    SELECT \(event.id), \(runner), now() + n * interval '1 second', 45.48, 9.17, n, 0 FROM generate_series(1, 5) AS n
                    """)
            }
            // The layout before: a withdrawal left its positions behind.
            try await database.query("DELETE FROM run_participants WHERE run_id = \(event.id) AND individual_id = \(runners[2])")

            try await Migrator(database: database, migrations: all).migrate()
            func count(_ runner: Int64) async throws -> Int64 {
                try await database.query("SELECT count(*) FROM run_positions WHERE individual_id = \(runner)")[0].decode(Int64.self)
            }
            #expect(try await count(runners[0]) == 5)
            #expect(try await count(runners[1]) == 5)
            #expect(try await count(runners[2]) == 0, "a withdrawn runner's positions are gone")

            await #expect(throws: PSQLError.self, "a position needs an enrolment") {
                try await database.query(
                    """
                    INSERT INTO run_positions (run_id, individual_id, recorded_at, latitude, longitude, distance_meters, offset_meters)
                    VALUES (\(event.id), \(runners[2]), now(), 45.48, 9.17, 0, 0)
                    """)
            }
            try await database.query("DELETE FROM run_participants WHERE run_id = \(event.id) AND individual_id = \(runners[1])")
            #expect(try await count(runners[1]) == 0, "a withdrawal takes its positions")
            try await database.query("DELETE FROM individuals WHERE id = \(runners[0])")
            #expect(try await count(runners[0]) == 0, "so does the deletion of the individual")
        }
    }
}

/// `NullableArrayParameter` as PostgreSQL reads it: each element, NULL where nil, in order, for
/// the element types the coalesced statements send.
@Suite struct NullableArrayParameterTests {
    @Test func postgreSQLReadsEachElementAndEachNull() async throws {
        let url = try await TestPostgres.shared.emptyDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
        try await database.whileRunning {
            /// The elements as PostgreSQL reads them back from the parameter, in order.
            func readBack<T: PostgresDecodable & PostgresArrayEncodable & PostgresNonThrowingEncodable>(
                _ values: [T?], as type: String
            ) async throws -> [T?] where T._DecodableType == T {
                let array = NullableArrayParameter(values)
                let query: PostgresQuery = "SELECT v FROM unnest(\(array)::\(unescaped: type)[]) WITH ORDINALITY AS u(v, o) ORDER BY o"
                return try await database.query(query).map { try $0.decode(T?.self) }
            }
            let dates: [Date?] = [Date(timeIntervalSince1970: 1_800_000_000.5), nil, Date(timeIntervalSince1970: -86_400.25), nil]
            #expect(try await readBack(dates, as: "timestamptz") == dates)
            let doubles: [Double?] = [nil, -1.5, 45.123456789012, .greatestFiniteMagnitude]
            #expect(try await readBack(doubles, as: "float8") == doubles)
            let texts: [String?] = ["12345", nil, "", "ä|x"]
            #expect(try await readBack(texts, as: "text") == texts)
            let integers: [Int64?] = [.min, nil, .max]
            #expect(try await readBack(integers, as: "int8") == integers)
            let none: [Int64?] = [nil, nil]
            let shape = try await database.query(
                "SELECT cardinality(\(NullableArrayParameter(none))::int8[]), cardinality(\(NullableArrayParameter([Int64?]()))::int8[])"
            )[0].decode((Int32, Int32).self)
            #expect(shape == (2, 0))
        }
    }
}
