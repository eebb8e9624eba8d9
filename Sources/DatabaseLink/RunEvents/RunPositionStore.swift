import Data4HelpCore
import Foundation
import PostgresNIO

/// How a `RunnerStateRecord` is read from its enrolment row.
extension RunnerStateRecord {
    static let columns = """
        p.runner_id, p.display_name, p.last_fix_at, p.latitude, p.longitude, p.distance_meters, p.first_fix_at, p.off_course,
        p.finished_at, p.dropped_fixes
        """

    init(row: PostgresRow, from first: Int = 0) throws {
        let cells = row.makeRandomAccess()
        func cell<T: PostgresDecodable>(_ index: Int, as type: T.Type = T.self) throws -> T { try cells[first + index].decode(T.self) }
        self.init(
            runnerId: try cell(0), displayName: try cell(1), lastFixAt: try cell(2), latitude: try cell(3), longitude: try cell(4),
            distanceMeters: try cell(5), firstFixAt: try cell(6), offCourse: try cell(7), finishedAt: try cell(8),
            droppedFixes: Int(try cell(9, as: Int32.self))
        )
    }
}

/// What applying a batch of positions decided: the positions to store, the runner's new state,
/// how many fixes were dropped, and the live update to announce (nil when nothing changed).
package struct RunPositionWrite: Sendable {
    package var positions: [RunPositionRecord]
    package var state: RunnerStateRecord
    package var dropped: Int
    package var announcement: String?
    /// The runner's workout, when this batch finished their run (stored once, with the batch).
    package var finishedWorkout: NewWorkout?

    package init(
        positions: [RunPositionRecord], state: RunnerStateRecord, dropped: Int, announcement: String?, finishedWorkout: NewWorkout? = nil
    ) {
        self.positions = positions
        self.state = state
        self.dropped = dropped
        self.announcement = announcement
        self.finishedWorkout = finishedWorkout
    }
}

extension RunPositionWrite {
    /// A write that breaks `RunPositionStore.apply`'s contract: positions newer than the state's
    /// last fix, or with no last fix at all. A caller's mistake, refused before anything is
    /// written: the write statement tells a stored position from a new one by the last fix, so
    /// such a write would store positions it then could not recognise when sent again.
    package struct ContractViolation: Error, Equatable {
        package let newestPositionMs: Int64
        package let lastFixMs: Int64?
    }

    /// Throws `ContractViolation` unless every position is at or before the state's last fix.
    func checkStoreContract() throws {
        guard let newest = positions.lazy.map(\.timeMs).max() else { return }
        let last = state.lastFixAt?.epochMilliseconds
        guard let last, newest <= last else { throw ContractViolation(newestPositionMs: newest, lastFixMs: last) }
    }
}

/// `run_positions` and the live state on `run_participants`.
package struct RunPositionStore: Sendable {
    /// The channel live updates are announced on (`pg_notify`), for every instance's spectators.
    package static let channel = "data4help_runs"

    let database: Database
    /// Live updates go out after the post's commit, not inside it (see `AnnouncementSender`).
    let announcements: AnnouncementSender
    /// Posts' reads, coalesced: what a runner's post reads, for every post that arrives while
    /// the statement before is under way (`RunnerBatchReadStatement`).
    let reads: StatementCoalescer<RunnerKey, PostgresRow?>
    /// Posts' writes, coalesced likewise (`RunPositionWriteStatement`): one statement and one
    /// commit for the runners whose posts were decided meanwhile.
    let writes: StatementCoalescer<RunnerWrite, WriteOutcome>
    /// Runners' rows as this instance last wrote them: a runner's next post here skips the read.
    let held = HeldRunners()

    /// How long a post that finds no shared statement under way waits for others. At 1,000 posts
    /// a second the statements had mostly carried one post each; with 2 ms, `bench live`'s
    /// servers took 0.86 cores against 1.01–1.04 (two alternated pairs; fix → update p99 88.8
    /// and 114.0 ms against 83.8 and 74.7, the same at the defaults).
    static let gathering = Duration.milliseconds(2)

    package init(database: Database) {
        self.database = database
        self.announcements = AnnouncementSender(database: database, channel: Self.channel)
        self.reads = StatementCoalescer(maximumWeight: 500, gathering: Self.gathering) { keys in
            let rows = try await database.withConnection { try await $0.execute(RunnerBatchReadStatement(keys: keys), logger: database.logger) }
            var found = [PostgresRow?](repeating: nil, count: keys.count)
            for row in rows {
                let ordinal = Int(try row.makeRandomAccess()[RunnerBatchReadStatement.ordinalColumn].decode(Int32.self))
                guard found.indices.contains(ordinal - 1) else { throw PostgresDecodingError.Code.failure }
                found[ordinal - 1] = row
            }
            return found
        }
        // A write's weight is its positions: a runner catching up after a tunnel sends up to a
        // thousand at once.
        self.writes = StatementCoalescer(maximumWeight: 5_000, gathering: Self.gathering, weight: { 1 + $0.write.positions.count }) { writes in
            try await database.withConnection { try await Self.written(writes, on: $0, logger: database.logger) }
        }
    }

    /// How many coalesced read and write statements this store has run so far.
    package var statements: (reads: Int, writes: Int) { (reads.statements, writes.statements) }

    /// Applies a runner's batch: `decide` gets the event, the runner's current state, the
    /// database's clock and the version of the event's course, and answers what to write: a
    /// state whose last fix is at least as new as the positions written with it (a fix no newer
    /// than the stored last fix is looked up as possibly stored already; a runner with no last
    /// fix has no stored position — `RunPositionWriteStatement`).
    /// `knownCourse` is the course version the caller holds parsed: when it is current, the
    /// event's `path` comes empty. Answers the write and how many positions were new (the rest
    /// were stored already), once committed; the write's announcement is then queued for every
    /// instance's spectators. Throws `RunRefusal.notFound` without such an event, `.notEnrolled`
    /// when the asker does not run in it, and `RunPositionWrite.ContractViolation` (writing
    /// nothing) for a write whose positions are newer than its state's last fix.
    ///
    /// Held first: a runner whose row this instance wrote last (`HeldRunners`) is decided from
    /// that row, with no read, and written only if the row and the event are still the versions
    /// held; `decide` then gets the database's time as estimated from its last read. Else (or
    /// when that write is refused, or `decide` throws on what was held) optimistic: the state is
    /// read without a lock and written back only if the row is still the one read. The reads and
    /// the writes go in statements shared with the other runners' posts of the moment
    /// (`StatementCoalescer`): at 1,000 posts a second, a statement and a commit for many posts.
    /// A post that met another of the same runner's, a batch that finishes the run (its workout is
    /// stored with it) and a post whose runner the read did not find (to tell which refusal) go
    /// through one transaction of their own with the runner's row locked instead. `decide` is
    /// called again on each path taken, and must start afresh; a refusal comes only from what was
    /// read, never from what was held.
    package func apply(
        publicId: UUID, individualId: Int64, knownCourse: Int64?,
        decide: (RunEventRecord, RunnerStateRecord, Date, Int64) throws -> RunPositionWrite
    ) async throws -> (write: RunPositionWrite, stored: Int) {
        let key = HeldRunners.Key(publicId: publicId, individualId: individualId)
        let applied: (write: RunPositionWrite, stored: Int)
        if let written = try await fromHeld(key, knownCourse: knownCourse, decide: decide) {
            applied = written
        } else if let written = try await optimistic(key, knownCourse: knownCourse, decide: decide) {
            applied = written
        } else {
            held.forget(key)
            applied = try await locked(publicId: publicId, individualId: individualId, knownCourse: knownCourse, decide: decide)
        }
        if let announcement = applied.write.announcement { announcements.send(announcement) }
        return (applied.write, applied.stored)
    }

    /// The write of a post decided from the runner's held row, if it is held: nil when it is not,
    /// when `decide` threw on it or answered a finish, or when the write was refused (the row or
    /// the event changed since); the runner is then let go.
    private func fromHeld(
        _ key: HeldRunners.Key, knownCourse: Int64?, decide: (RunEventRecord, RunnerStateRecord, Date, Int64) throws -> RunPositionWrite
    ) async throws -> (write: RunPositionWrite, stored: Int)? {
        guard let runner = held.runner(key, knownCourse: knownCourse) else { return nil }
        guard let write = try? decide(runner.event, runner.state, runner.now, runner.courseVersion), write.finishedWorkout == nil,
            (try? write.checkStoreContract()) != nil
        else {
            held.forget(key)
            return nil
        }
        let outcome = try await writes.submit(
            RunnerWrite(
                runId: runner.event.id, individualId: key.individualId, write: write, version: runner.version,
                eventVersion: runner.eventVersion))
        guard outcome.updated, let version = outcome.version else {
            held.forget(key)
            return nil
        }
        held.update(key, state: outcome.written(write.state), version: version)
        return (write, outcome.stored)
    }

    /// The unlocked read and the conditional write, each coalesced with other posts'; nil when
    /// the read found no runner, or the write did not apply (the row changed since the read) or
    /// needs the transaction (a finish). A write that applied leaves the runner held.
    private func optimistic(
        _ key: HeldRunners.Key, knownCourse: Int64?, decide: (RunEventRecord, RunnerStateRecord, Date, Int64) throws -> RunPositionWrite
    ) async throws -> (write: RunPositionWrite, stored: Int)? {
        let sentAt = Date()
        guard let row = try await reads.submit(RunnerKey(individualId: key.individualId, publicId: key.publicId, knownCourse: knownCourse))
        else { return nil }
        let answeredAt = Date()
        let read = try RunnerRead(row: row)
        let write = try decide(read.event, read.state, read.now, read.courseVersion)
        try write.checkStoreContract()
        guard write.finishedWorkout == nil else { return nil }
        let outcome = try await writes.submit(
            RunnerWrite(runId: read.event.id, individualId: key.individualId, write: write, version: read.version, eventVersion: nil))
        guard outcome.updated else { return nil }
        if let version = outcome.version {
            held.keep(
                key, event: read.event, eventVersion: read.eventVersion, courseVersion: read.courseVersion,
                clock: .init(databaseNow: read.now, sentAt: sentAt, answeredAt: answeredAt), state: outcome.written(write.state), version: version)
        }
        return (write, outcome.stored)
    }

    /// The batch in one transaction with the runner's row locked.
    private func locked(
        publicId: UUID, individualId: Int64, knownCourse: Int64?,
        decide: (RunEventRecord, RunnerStateRecord, Date, Int64) throws -> RunPositionWrite
    ) async throws -> (write: RunPositionWrite, stored: Int) {
        try await database.withTransaction { connection in
            let select = RunnerLockStatement(individualId: individualId, publicId: publicId, knownCourse: knownCourse)
            guard let row = try await connection.execute(select, logger: database.logger).first else {
                let event = try await connection.query("SELECT 1 FROM run_events WHERE public_id = \(publicId)", logger: database.logger).collect()
                throw event.isEmpty ? RunRefusal.notFound : RunRefusal.notEnrolled
            }
            let read = try RunnerRead(row: row)
            let write = try decide(read.event, read.state, read.now, read.courseVersion)
            try write.checkStoreContract()
            let mine = RunnerWrite(runId: read.event.id, individualId: individualId, write: write, version: nil, eventVersion: nil)
            let outcome = try await Self.written([mine], on: connection, logger: database.logger)[0]
            if var workout = write.finishedWorkout {  // the row is locked: the write applied
                workout.runId = read.event.id
                _ = try await WorkoutStore.insert(
                    [workout], importId: nil, individualId: individualId, announce: true, on: connection, logger: database.logger)
            }
            return (write, outcome.stored)
        }
    }

    /// Writes runners' batches in one statement (each only if the runner's row is still at its
    /// `version`, when it has one): whether each state was written, and how many of its
    /// positions were new. A runner named twice is written once, for the first: the others
    /// answer not written, as if they had met it (their post goes through the lock).
    private static func written(_ writes: [RunnerWrite], on connection: LeasedConnection, logger: Logger) async throws -> [WriteOutcome] {
        var seen = Set<RunnerWrite.Enrolment>()
        let unique = writes.map { seen.insert(RunnerWrite.Enrolment(runId: $0.runId, individualId: $0.individualId)).inserted }
        let statement = RunPositionWriteStatement(writes: zip(writes, unique).filter(\.1).map(\.0))
        var outcomes = try await connection.execute(statement, logger: logger).makeIterator()
        return try unique.map { isUnique in
            guard isUnique else { return WriteOutcome(updated: false, stored: 0) }
            guard let outcome = outcomes.next() else { throw PostgresDecodingError.Code.failure }
            return outcome
        }
    }

    /// An individual's enrolments, oldest first: the event's public id, when they enrolled, and
    /// their runner's state (for their export).
    package func enrolments(individualId: Int64) async throws -> [(runId: UUID, enrolledAt: Date, state: RunnerStateRecord)] {
        try await database.query(
            """
            SELECT e.public_id, p.enrolled_at, \(unescaped: RunnerStateRecord.columns)
            FROM run_participants p JOIN run_events e ON e.id = p.run_id
            WHERE p.individual_id = \(individualId)
            ORDER BY p.enrolled_at, p.run_id
            """
        ).map { row in
            let cells = row.makeRandomAccess()
            return (try cells[0].decode(UUID.self), try cells[1].decode(Date.self), try RunnerStateRecord(row: row, from: 2))
        }
    }

    /// Every runner's state, for a snapshot or the leaderboard.
    package func states(runId: Int64) async throws -> [RunnerStateRecord] {
        try await database.query(
            """
            SELECT \(unescaped: RunnerStateRecord.columns) FROM run_participants p WHERE p.run_id = \(runId) ORDER BY p.enrolled_at, p.runner_id
            """
        ).map { try RunnerStateRecord(row: $0) }
    }

    /// One runner's stored positions in a run (by the run's public id), in time order: the route
    /// of the workout their finish made.
    package func route(runPublicId: UUID, individualId: Int64, limit: Int) async throws -> [RunPositionRecord] {
        try await database.query(
            """
            SELECT (extract(epoch FROM r.recorded_at) * 1000)::int8, r.latitude, r.longitude, r.accuracy, r.distance_meters, r.offset_meters
            FROM run_positions r JOIN run_events e ON e.id = r.run_id
            WHERE e.public_id = \(runPublicId) AND r.individual_id = \(individualId)
            ORDER BY r.recorded_at  -- index: the primary key (run_id, individual_id, recorded_at)
            LIMIT \(limit)
            """
        ).map { row in
            let r = try row.decode((Int64, Double, Double, Float?, Double, Float).self)
            return RunPositionRecord(timeMs: r.0, latitude: r.1, longitude: r.2, accuracy: r.3, distanceMeters: r.4, offsetMeters: r.5)
        }
    }

    /// Stored positions in time order, for replay (index: run_positions_time_idx); `after` is the
    /// last (time, runner) of the previous page. The page's time bound is also stated on its own
    /// (the row comparison spans two tables, so the index could not start from it): a page read
    /// every position of the run from its start.
    ///
    /// The page's end is bounded too: the order's second key (the runner's public id) is on the
    /// enrolment, so the sort needs the join, and a page read every position after its start to
    /// sort them. `page_end` is the time of the `limit`-th position after the previous page's
    /// time, in the index's own order (at most `limit` index entries): at least `limit` positions
    /// lie in (previous time, page end], so the page is within the previous page's time and the
    /// page end, ties at both included, and the rest of the race is not read.
    package func positions(
        runId: Int64, runnerId: UUID?, fromMs: Int64?, toMs: Int64?, after: (timeMs: Int64, runnerId: UUID)?, limit: Int
    ) async throws -> [(runnerId: UUID, position: RunPositionRecord)] {
        let endOffset = max(limit, 1) - 1
        return try await database.query(
            """
            WITH page_end AS (
                SELECT e.recorded_at FROM run_positions e
                WHERE e.run_id = \(runId)
                  AND (\(runnerId)::uuid IS NULL
                       OR e.individual_id = (SELECT individual_id FROM run_participants WHERE run_id = \(runId) AND runner_id = \(runnerId)))
                  AND (\(fromMs)::int8 IS NULL OR e.recorded_at >= 'epoch'::timestamptz + \(fromMs) * interval '1 millisecond')
                  AND (\(toMs)::int8 IS NULL OR e.recorded_at < 'epoch'::timestamptz + \(toMs) * interval '1 millisecond')
                  AND (\(after?.timeMs)::int8 IS NULL OR e.recorded_at > 'epoch'::timestamptz + \(after?.timeMs) * interval '1 millisecond')
                ORDER BY e.recorded_at
                OFFSET \(endOffset) LIMIT 1
            )
            SELECT p.runner_id, (extract(epoch FROM r.recorded_at) * 1000)::int8, r.latitude, r.longitude, r.accuracy, r.distance_meters, r.offset_meters
            FROM run_positions r JOIN run_participants p ON p.run_id = r.run_id AND p.individual_id = r.individual_id
            WHERE r.run_id = \(runId)
              AND r.recorded_at <= coalesce((SELECT recorded_at FROM page_end), 'infinity'::timestamptz)
              AND (\(runnerId)::uuid IS NULL OR p.runner_id = \(runnerId))
              AND (\(fromMs)::int8 IS NULL OR r.recorded_at >= 'epoch'::timestamptz + \(fromMs) * interval '1 millisecond')
              AND (\(toMs)::int8 IS NULL OR r.recorded_at < 'epoch'::timestamptz + \(toMs) * interval '1 millisecond')
              AND (\(after?.timeMs)::int8 IS NULL
                   OR (r.recorded_at >= 'epoch'::timestamptz + \(after?.timeMs) * interval '1 millisecond'
                       AND (r.recorded_at, p.runner_id) > ('epoch'::timestamptz + \(after?.timeMs) * interval '1 millisecond', \(after?.runnerId)::uuid)))
            ORDER BY r.recorded_at, p.runner_id
            LIMIT \(limit)
            """
        ).map { row in
            let r = try row.decode((UUID, Int64, Double, Double, Float?, Double, Float).self)
            return (r.0, RunPositionRecord(timeMs: r.1, latitude: r.2, longitude: r.3, accuracy: r.4, distanceMeters: r.5, offsetMeters: r.6))
        }
    }
}

/// A runner's post's key: who posts, to which event (its public id), holding which course
/// version parsed.
struct RunnerKey: Sendable {
    var individualId: Int64
    var publicId: UUID
    var knownCourse: Int64?
}

/// What a runner select read (`RunnerLockStatement`, `RunnerBatchReadStatement`): the event,
/// the runner's state, the database's time, the course version and the runner's and the event's
/// row versions.
struct RunnerRead {
    var event: RunEventRecord
    var state: RunnerStateRecord
    var now: Date
    var courseVersion: Int64
    var version: String
    var eventVersion: String

    init(row: PostgresRow) throws {
        let cells = row.makeRandomAccess()
        event = try RunEventRecord(row: row)
        state = try RunnerStateRecord(row: row, from: 15)
        now = try cells[25].decode(Date.self)
        courseVersion = try cells[26].decode(Int64.self)
        version = try cells[27].decode(String.self)
        eventVersion = try cells[28].decode(String.self)
    }
}

/// A runner's decided post, to write: the row version its read saw or was held at (nil when the
/// row is locked), and the version of the event's row it was decided on when that was held
/// rather than read (the write then checks the event too).
struct RunnerWrite: Sendable {
    /// The enrolment (`run_participants` row) a write is for: one write each in a statement.
    struct Enrolment: Hashable {
        var runId: Int64
        var individualId: Int64
    }

    var runId: Int64
    var individualId: Int64
    var write: RunPositionWrite
    var version: String?
    var eventVersion: String?
}

/// Whether a runner's state was written, how many of their positions were new, and the row's
/// new version and dropped-fix count when it was written.
struct WriteOutcome: Sendable, Equatable {
    var updated: Bool
    var stored: Int
    var version: String? = nil
    var droppedFixes: Int? = nil

    /// The state as written: the write's, with the row's dropped-fix count (which the statement
    /// adds to).
    func written(_ state: RunnerStateRecord) -> RunnerStateRecord {
        var state = state
        state.droppedFixes = droppedFixes ?? state.droppedFixes
        return state
    }
}

/// What a runner's post reads (`RunPositionStore.apply`): the event (its course only when the
/// server does not hold it: `RunEventRecord.postColumns`), the runner's state, the time, the
/// course's version and the versions of the runner's and the event's rows (`xmin`: the
/// transaction that last wrote each). Prepared statements, like the write after them, since every runner posts every
/// second or few and parsing and planning cost PostgreSQL more than running them (0.8 of about
/// 1.3 ms a post, `bench live`'s PostgreSQL log).
private func runnerColumns(known: String) -> String {
    "\(RunEventRecord.postColumns(known: known)), \(RunnerStateRecord.columns), now(), \(RunEventRecord.courseVersion), p.xmin::text AS runner_version, e.xmin::text AS event_version"
}

/// What one runner's post reads, with the runner's row locked until the transaction ends.
struct RunnerLockStatement: PostgresPreparedStatement {
    static let name = "data4help_run_runner_lock"
    static let sql = """
        SELECT \(runnerColumns(known: "$3"))
        FROM run_events e JOIN run_participants p ON p.run_id = e.id AND p.individual_id = $1
        WHERE e.public_id = $2
        FOR UPDATE OF p
        """

    let individualId: Int64
    let publicId: UUID
    let knownCourse: Int64?

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 3)
        bindings.append(individualId)
        bindings.append(publicId)
        bindings.append(knownCourse)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

/// What many runners' posts read, without a lock (the write checks each row's version): a row
/// per key that names an enrolled runner of an existing event, with the key's ordinal (from 1)
/// last. Each key is looked up by itself (`LATERAL`, kept apart by `OFFSET 0`): as a plain join,
/// the generic plan found each runner's row among all of their event's (the primary key's
/// `run_id` alone, `individual_id` as a filter), 5,000 rows a key in a race of 5,000.
struct RunnerBatchReadStatement: PostgresPreparedStatement {
    static let name = "data4help_run_runner_batch_read"
    static let sql = """
        SELECT r.*, k.ordinal::int4
        FROM unnest($1::int8[], $2::uuid[], $3::int8[]) WITH ORDINALITY AS k(individual_id, public_id, known, ordinal)
        CROSS JOIN LATERAL (
            SELECT \(runnerColumns(known: "k.known"))
            FROM run_events e JOIN run_participants p ON p.run_id = e.id AND p.individual_id = k.individual_id
            WHERE e.public_id = k.public_id
            OFFSET 0
        ) r
        """
    static let ordinalColumn = 29

    let keys: [RunnerKey]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 3)
        bindings.append(keys.map(\.individualId))
        bindings.append(keys.map(\.publicId))
        bindings.append(NullableArrayParameter(keys.map(\.knownCourse)))
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

/// Runners' batches in one statement (one round trip and one commit for the posts of a moment):
/// each runner's state, and their new positions if the state was written. With a `version` (the
/// row's `xmin` as read or held), only if the row is still that version; without, unconditionally
/// (the row is locked); with an `eventVersion` (a post decided from a held row), only if the
/// event's row is still that version too. Answers, per runner in order, whether the state was written, how
/// many positions were new, and the row's new version and dropped-fix count. Each runner at most once (the caller's check). The announcements are not
/// sent here but after the commit (`AnnouncementSender`).
///
/// Fixes already stored count as dropped (the runner's `dropped_fixes`): counted before the
/// insert, in the same snapshot (a concurrent post of the same runner changes the row's version,
/// or waits for its lock). The insert's `ON CONFLICT DO NOTHING` keeps them out either way.
/// Only a fix no newer than the runner's stored last fix can be stored already (positions are
/// written only here, with a state whose last fix is at least their newest; a withdrawal deletes
/// both), so only those are looked up — none of a runner with no last fix yet, who has no
/// stored position. Every fix was looked up before: where many runners share a fix's time
/// (phones report on whole seconds; the bench's 5,000 runners share one) the generic plan took
/// `run_positions_time_idx` (run, time) and filtered the runner, 5,000 index entries for the one
/// row the primary key finds at once (0.9 ms under `EXPLAIN ANALYZE`; `bench live`'s post p99 at
/// 1,000 a second went from 105.5 to 17.8 ms). Then a runner's first fixes were still looked
/// up: at a mass start the statement took 15–75 ms for the first seconds (PostgreSQL's log of
/// the city race, every first fix probing the others' of the same second), and the posts queued
/// behind it until the eighth second.
struct RunPositionWriteStatement: PostgresPreparedStatement {
    static let name = "data4help_run_position_write"
    static let sql = """
        WITH w AS (
            SELECT * FROM unnest($1::int8[], $2::int8[], $3::timestamptz[], $4::float8[], $5::float8[], $6::float8[], $7::timestamptz[],
                                 $8::bool[], $9::timestamptz[], $10::int4[], $11::text[], $19::text[]) WITH ORDINALITY
                AS w(run_id, individual_id, last_fix_at, latitude, longitude, distance_meters, first_fix_at, off_course, finished_at,
                     dropped, version, event_version, ordinal)
        ), fixes AS (
            SELECT w.ordinal, w.run_id, w.individual_id, 'epoch'::timestamptz + n.t * interval '1 millisecond' AS at, n.lat, n.lon,
                   NULLIF(n.acc, 'NaN'::float4) AS acc, n.d, n.o
            FROM unnest($12::int4[], $13::int8[], $14::float8[], $15::float8[], $16::float4[], $17::float8[], $18::float4[])
                AS n(runner, t, lat, lon, acc, d, o)
            JOIN w ON w.ordinal = n.runner
        ), updated AS (
            UPDATE run_participants p SET last_fix_at = w.last_fix_at, latitude = w.latitude, longitude = w.longitude,
                distance_meters = w.distance_meters, first_fix_at = w.first_fix_at, off_course = w.off_course,
                finished_at = w.finished_at,
                dropped_fixes = p.dropped_fixes + w.dropped
                    + (SELECT count(*) FROM fixes f
                       WHERE f.ordinal = w.ordinal AND f.at <= p.last_fix_at
                         AND EXISTS (SELECT 1 FROM run_positions r
                                     WHERE r.run_id = f.run_id AND r.individual_id = f.individual_id AND r.recorded_at = f.at))::int4
            FROM w
            WHERE p.run_id = w.run_id AND p.individual_id = w.individual_id AND (w.version IS NULL OR p.xmin::text = w.version)
              AND (w.event_version IS NULL OR EXISTS (SELECT 1 FROM run_events e WHERE e.id = w.run_id AND e.xmin::text = w.event_version))
            RETURNING w.ordinal, p.xmin::text AS version, p.dropped_fixes
        ), inserted AS (
            INSERT INTO run_positions (run_id, individual_id, recorded_at, latitude, longitude, accuracy, distance_meters, offset_meters)
            SELECT f.run_id, f.individual_id, f.at, f.lat, f.lon, f.acc, f.d, f.o FROM fixes f JOIN updated u ON u.ordinal = f.ordinal
            ON CONFLICT DO NOTHING
            RETURNING run_id, individual_id
        )
        SELECT u.ordinal IS NOT NULL, coalesce(i.stored, 0)::int4, u.version, u.dropped_fixes
        FROM w LEFT JOIN updated u ON u.ordinal = w.ordinal
        LEFT JOIN (SELECT run_id, individual_id, count(*) AS stored FROM inserted GROUP BY run_id, individual_id) i
            ON i.run_id = w.run_id AND i.individual_id = w.individual_id
        ORDER BY w.ordinal
        """

    typealias Row = WriteOutcome

    let writes: [RunnerWrite]

    func makeBindings() throws -> PostgresBindings {
        let states = writes.map(\.write.state)
        var bindings = PostgresBindings(capacity: 19)
        bindings.append(writes.map(\.runId))
        bindings.append(writes.map(\.individualId))
        bindings.append(NullableArrayParameter(states.map(\.lastFixAt)))
        bindings.append(NullableArrayParameter(states.map(\.latitude)))
        bindings.append(NullableArrayParameter(states.map(\.longitude)))
        bindings.append(states.map(\.distanceMeters))
        bindings.append(NullableArrayParameter(states.map(\.firstFixAt)))
        bindings.append(states.map(\.offCourse))
        bindings.append(NullableArrayParameter(states.map(\.finishedAt)))
        bindings.append(writes.map { Int32(clamping: $0.write.dropped) })
        bindings.append(NullableArrayParameter(writes.map(\.version)))
        let positions = writes.enumerated().flatMap { index, runner in runner.write.positions.map { (Int32(clamping: index + 1), $0) } }
        bindings.append(positions.map(\.0))
        bindings.append(positions.map(\.1.timeMs))
        bindings.append(positions.map(\.1.latitude))
        bindings.append(positions.map(\.1.longitude))
        bindings.append(positions.map { $0.1.accuracy ?? .nan })
        bindings.append(positions.map(\.1.distanceMeters))
        bindings.append(positions.map(\.1.offsetMeters))
        bindings.append(NullableArrayParameter(writes.map(\.eventVersion)))
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> WriteOutcome {
        let (updated, stored, version, dropped) = try row.decode((Bool, Int32, String?, Int32?).self)
        return WriteOutcome(updated: updated, stored: Int(stored), version: version, droppedFixes: dropped.map(Int.init))
    }
}
