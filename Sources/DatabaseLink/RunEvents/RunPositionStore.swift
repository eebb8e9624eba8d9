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

/// `run_positions` and the live state on `run_participants`.
package struct RunPositionStore: Sendable {
    /// The channel live updates are announced on (`pg_notify`), for every instance's spectators.
    package static let channel = "data4help_runs"

    let database: Database
    /// Live updates go out after the post's commit, not inside it (see `AnnouncementSender`).
    let announcements: AnnouncementSender

    package init(database: Database) {
        self.database = database
        self.announcements = AnnouncementSender(database: database, channel: Self.channel)
    }

    /// Applies a runner's batch: `decide` gets the event, the runner's current state, the
    /// database's clock and the version of the event's course, and answers what to write.
    /// `knownCourse` is the course version the caller holds parsed: when it is current, the
    /// event's `path` comes empty. Answers the write and how many positions were new (the rest
    /// were stored already), once committed; the write's announcement is then queued for every
    /// instance's spectators. Throws `RunRefusal.notFound` without such an event, `.notEnrolled`
    /// when the asker does not run in it.
    ///
    /// Optimistic first: the state is read without a lock and written back only if the row is
    /// still the one read (two statements, each its own transaction, instead of BEGIN, a locking
    /// read, the write and COMMIT). A post that met another of the same runner's, and a batch that
    /// finishes the run (its workout is stored with it), go through one transaction with the
    /// runner's row locked instead; `decide` is then called again, and must start afresh.
    package func apply(
        publicId: UUID, individualId: Int64, knownCourse: Int64?,
        decide: (RunEventRecord, RunnerStateRecord, Date, Int64) throws -> RunPositionWrite
    ) async throws -> (write: RunPositionWrite, stored: Int) {
        let applied: (write: RunPositionWrite, stored: Int)
        if let written = try await optimistic(publicId: publicId, individualId: individualId, knownCourse: knownCourse, decide: decide) {
            applied = written
        } else {
            applied = try await locked(publicId: publicId, individualId: individualId, knownCourse: knownCourse, decide: decide)
        }
        if let announcement = applied.write.announcement { announcements.send(announcement) }
        return (applied.write, applied.stored)
    }

    /// The unlocked read and the conditional write; nil when the write did not apply (the row
    /// changed since the read) or needs the transaction (a finish).
    private func optimistic(
        publicId: UUID, individualId: Int64, knownCourse: Int64?,
        decide: (RunEventRecord, RunnerStateRecord, Date, Int64) throws -> RunPositionWrite
    ) async throws -> (write: RunPositionWrite, stored: Int)? {
        try await database.withConnection { connection in
            let select = RunnerReadStatement(individualId: individualId, publicId: publicId, knownCourse: knownCourse)
            let (write, runId, version) = try await decided(select, on: connection, decide: decide)
            guard write.finishedWorkout == nil else { return nil }
            let outcome = try await written(write, runId: runId, individualId: individualId, ifStill: version, on: connection)
            return outcome.updated ? (write, outcome.stored) : nil
        }
    }

    /// The batch in one transaction with the runner's row locked.
    private func locked(
        publicId: UUID, individualId: Int64, knownCourse: Int64?,
        decide: (RunEventRecord, RunnerStateRecord, Date, Int64) throws -> RunPositionWrite
    ) async throws -> (write: RunPositionWrite, stored: Int) {
        try await database.withTransaction { connection in
            let select = RunnerLockStatement(individualId: individualId, publicId: publicId, knownCourse: knownCourse)
            let (write, runId, _) = try await decided(select, on: connection, decide: decide)
            let outcome = try await written(write, runId: runId, individualId: individualId, ifStill: nil, on: connection)
            if var workout = write.finishedWorkout {  // the row is locked: the write applied
                workout.runId = runId
                _ = try await WorkoutStore.insert(
                    [workout], importId: nil, individualId: individualId, announce: true, on: connection, logger: database.logger)
            }
            return (write, outcome.stored)
        }
    }

    /// Runs `select` and `decide` on what it read: the write, the event's id and the runner's
    /// row version. Throws `RunRefusal` when the select found no row.
    private func decided(
        _ select: some RunnerSelecting, on connection: LeasedConnection,
        decide: (RunEventRecord, RunnerStateRecord, Date, Int64) throws -> RunPositionWrite
    ) async throws -> (write: RunPositionWrite, runId: Int64, version: String) {
        guard let row = try await connection.execute(select, logger: database.logger).first else {
            let event = try await connection.query("SELECT 1 FROM run_events WHERE public_id = \(select.publicId)", logger: database.logger).collect()
            throw event.isEmpty ? RunRefusal.notFound : RunRefusal.notEnrolled
        }
        let cells = row.makeRandomAccess()
        let event = try RunEventRecord(row: row)
        let write = try decide(event, try RunnerStateRecord(row: row, from: 15), try cells[25].decode(Date.self), try cells[26].decode(Int64.self))
        return (write, event.id, try cells[27].decode(String.self))
    }

    /// Writes the batch (if the runner's row is still at `version`, when given): whether the
    /// state was written, and how many positions were new.
    private func written(
        _ write: RunPositionWrite, runId: Int64, individualId: Int64, ifStill version: String?, on connection: LeasedConnection
    ) async throws -> (updated: Bool, stored: Int) {
        let statement = RunPositionWriteStatement(runId: runId, individualId: individualId, write: write, version: version)
        guard let outcome = try await connection.execute(statement, logger: database.logger).first else { return (false, 0) }
        return (outcome.updated == 1, Int(outcome.stored))
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

    /// Stored positions in time order, for replay (index: run_positions_time_idx); `after` is the
    /// last (time, runner) of the previous page.
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

    package func positions(
        runId: Int64, runnerId: UUID?, fromMs: Int64?, toMs: Int64?, after: (timeMs: Int64, runnerId: UUID)?, limit: Int
    ) async throws -> [(runnerId: UUID, position: RunPositionRecord)] {
        try await database.query(
            """
            SELECT p.runner_id, (extract(epoch FROM r.recorded_at) * 1000)::int8, r.latitude, r.longitude, r.accuracy, r.distance_meters, r.offset_meters
            FROM run_positions r JOIN run_participants p ON p.run_id = r.run_id AND p.individual_id = r.individual_id
            WHERE r.run_id = \(runId)
              AND (\(runnerId)::uuid IS NULL OR p.runner_id = \(runnerId))
              AND (\(fromMs)::int8 IS NULL OR r.recorded_at >= 'epoch'::timestamptz + \(fromMs) * interval '1 millisecond')
              AND (\(toMs)::int8 IS NULL OR r.recorded_at < 'epoch'::timestamptz + \(toMs) * interval '1 millisecond')
              AND (\(after?.timeMs)::int8 IS NULL
                   OR (r.recorded_at, p.runner_id) > ('epoch'::timestamptz + \(after?.timeMs) * interval '1 millisecond', \(after?.runnerId)::uuid))
            ORDER BY r.recorded_at, p.runner_id
            LIMIT \(limit)
            """
        ).map { row in
            let r = try row.decode((UUID, Int64, Double, Double, Float?, Double, Float).self)
            return (r.0, RunPositionRecord(timeMs: r.1, latitude: r.2, longitude: r.3, accuracy: r.4, distanceMeters: r.5, offsetMeters: r.6))
        }
    }
}

/// What a runner's post reads (`RunPositionStore.apply`): the event (its course only when the
/// server does not hold it: `RunEventRecord.postColumns`), the runner's state, the time, the
/// course's version and the version of the runner's row (`xmin`: the transaction that last
/// wrote it). Prepared statements, like the write after them, since every runner posts every
/// second or few and parsing and planning cost PostgreSQL more than running them (0.8 of about
/// 1.3 ms a post, `bench live`'s PostgreSQL log).
private func runnerSelect(locking: Bool) -> String {
    """
    SELECT \(RunEventRecord.postColumns), \(RunnerStateRecord.columns), now(), \(RunEventRecord.courseVersion), p.xmin::text
    FROM run_events e JOIN run_participants p ON p.run_id = e.id AND p.individual_id = $1
    WHERE e.public_id = $2
    """ + (locking ? "\nFOR UPDATE OF p" : "")
}

/// `runnerSelect` without a lock: the write checks the row's version instead.
struct RunnerReadStatement: RunnerSelecting {
    static let name = "data4help_run_runner_read"
    static let sql = runnerSelect(locking: false)
    let individualId: Int64
    let publicId: UUID
    let knownCourse: Int64?
}

/// `runnerSelect` with the runner's row locked until the transaction ends.
struct RunnerLockStatement: RunnerSelecting {
    static let name = "data4help_run_runner_lock"
    static let sql = runnerSelect(locking: true)
    let individualId: Int64
    let publicId: UUID
    let knownCourse: Int64?
}

/// The bindings and rows both runner selects share.
protocol RunnerSelecting: PostgresPreparedStatement where Row == PostgresRow {
    var individualId: Int64 { get }
    var publicId: UUID { get }
    var knownCourse: Int64? { get }
}

extension RunnerSelecting {
    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 3)
        bindings.append(individualId)
        bindings.append(publicId)
        bindings.append(knownCourse)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

/// A runner's batch in one statement (one round trip at hundreds of posts a second): the
/// runner's state, and the new positions if the state was written. With a `version` (the row's
/// `xmin` as read), only if the row is still that version; without, unconditionally (the row is
/// locked). Fixes already stored count as dropped: counted before the insert, in the same
/// snapshot (a concurrent post of the same runner changes the row's version, or waits for its
/// lock). Answers whether the state was written and how many positions were new. The
/// announcement is not sent here but after the commit (`AnnouncementSender`).
struct RunPositionWriteStatement: PostgresPreparedStatement {
    static let name = "data4help_run_position_write"
    static let sql = """
        WITH fixes AS (
            SELECT 'epoch'::timestamptz + t * interval '1 millisecond' AS at, lat, lon, NULLIF(acc, 'NaN'::float4) AS acc, d, o
            FROM unnest($3::int8[], $4::float8[], $5::float8[], $6::float4[], $7::float8[], $8::float4[]) AS n(t, lat, lon, acc, d, o)
        ), updated AS (
            UPDATE run_participants SET last_fix_at = $9::timestamptz, latitude = $10::float8, longitude = $11::float8,
                distance_meters = $12::float8, first_fix_at = $13::timestamptz, off_course = $14::bool, finished_at = $15::timestamptz,
                dropped_fixes = dropped_fixes + $16::int4
                    + (SELECT count(*) FROM fixes f
                       WHERE EXISTS (SELECT 1 FROM run_positions r WHERE r.run_id = $1 AND r.individual_id = $2 AND r.recorded_at = f.at))::int4
            WHERE run_id = $1 AND individual_id = $2 AND ($17::text IS NULL OR xmin::text = $17::text)
            RETURNING 1
        ), inserted AS (
            INSERT INTO run_positions (run_id, individual_id, recorded_at, latitude, longitude, accuracy, distance_meters, offset_meters)
            SELECT $1, $2, at, lat, lon, acc, d, o FROM fixes
            WHERE EXISTS (SELECT 1 FROM updated)
            ON CONFLICT DO NOTHING
            RETURNING 1
        )
        SELECT (SELECT count(*) FROM updated)::int4, (SELECT count(*) FROM inserted)::int4
        """

    typealias Row = (updated: Int32, stored: Int32)

    let runId: Int64
    let individualId: Int64
    let write: RunPositionWrite
    let version: String?

    func makeBindings() throws -> PostgresBindings {
        let (positions, state) = (write.positions, write.state)
        var bindings = PostgresBindings(capacity: 17)
        bindings.append(runId)
        bindings.append(individualId)
        bindings.append(positions.map(\.timeMs))
        bindings.append(positions.map(\.latitude))
        bindings.append(positions.map(\.longitude))
        bindings.append(positions.map { $0.accuracy ?? .nan })
        bindings.append(positions.map(\.distanceMeters))
        bindings.append(positions.map(\.offsetMeters))
        bindings.append(state.lastFixAt)
        bindings.append(state.latitude)
        bindings.append(state.longitude)
        bindings.append(state.distanceMeters)
        bindings.append(state.firstFixAt)
        bindings.append(state.offCourse)
        bindings.append(state.finishedAt)
        bindings.append(Int32(clamping: write.dropped))
        bindings.append(version)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let (updated, stored) = try row.decode((Int32, Int32).self)
        return (updated, stored)
    }
}
