import Data4HelpCore
import Foundation
import PostgresNIO

/// A run event as stored, with its participant count.
package struct RunEventRecord: Sendable {
    package var id: Int64
    package var publicId: UUID
    package var organiserId: Int64
    package var createdAt: Date
    package var updatedAt: Date
    package var name: String
    package var description: String
    package var startsAt: Date
    package var endsAt: Date
    package var enrolmentDeadline: Date
    package var maxParticipants: Int
    /// GeoJSON coordinates, `[[lon, lat], ...]`; empty where the statement left out a course
    /// its caller already holds (`postColumns`).
    package var path: String
    package var lengthMeters: Double
    package var cancelledAt: Date?
    /// 0 where the statement did not count them (`postColumns`).
    package var participantCount: Int

    /// The event's own columns (alias `e`), without the participant count; `path` is the
    /// course's expression.
    private static func eventColumns(path: String = "e.path::text") -> String {
        """
        e.id, e.public_id, e.organiser_id, e.created_at, e.updated_at, e.name, e.description, e.starts_at, e.ends_at,
        e.enrolment_deadline, e.max_participants, \(path), e.length_meters, e.cancelled_at
        """
    }

    /// The select list, a constant spliced into the queries below (alias `e`).
    static let columns = eventColumns() + ", (SELECT count(*) FROM run_participants p WHERE p.run_id = e.id)::int4"

    /// The version of an event's course that a caller keeps parsed: its last change, in
    /// microseconds since the epoch (exact, where a `Date` read back and sent again may be off by
    /// one microsecond).
    static let courseVersion = "(extract(epoch FROM e.updated_at) * 1000000)::int8"

    /// `columns` for a runner's position post (`RunnerLockStatement`, `RunnerBatchReadStatement`),
    /// where `known` is the course version the server holds parsed (or NULL):
    /// - the course only when it is not that version, else an empty path. A course has up to
    ///   20,000 points: sent as text at every post, it would be up to a megabyte a post for a
    ///   course the server parsed already.
    /// - 0 for the participant count, which the post never uses: counting every participant at
    ///   every post was most of that statement's time (0.69 ms at the median with 5,000 runners,
    ///   PostgreSQL's log of `bench live`'s city race).
    static func postColumns(known: String) -> String {
        eventColumns(path: "CASE WHEN \(courseVersion) = \(known) THEN '' ELSE e.path::text END") + ", 0::int4"
    }

    init(row: PostgresRow) throws {
        let cells = row.makeRandomAccess()
        func cell<T: PostgresDecodable>(_ index: Int, as type: T.Type = T.self) throws -> T { try cells[index].decode(T.self) }
        id = try cell(0); publicId = try cell(1); organiserId = try cell(2); createdAt = try cell(3); updatedAt = try cell(4)
        name = try cell(5); description = try cell(6); startsAt = try cell(7); endsAt = try cell(8); enrolmentDeadline = try cell(9)
        maxParticipants = Int(try cell(10, as: Int32.self)); path = try cell(11); lengthMeters = try cell(12); cancelledAt = try cell(13)
        participantCount = Int(try cell(14, as: Int32.self))
    }
}

/// What an organiser sets: the whole event (a change is merged by the caller first).
package struct RunEventDraft: Sendable {
    package var name: String
    package var description: String
    package var startsAt: Date
    package var endsAt: Date
    package var enrolmentDeadline: Date
    package var maxParticipants: Int
    package var path: String
    package var lengthMeters: Double

    package init(
        name: String, description: String, startsAt: Date, endsAt: Date, enrolmentDeadline: Date, maxParticipants: Int, path: String,
        lengthMeters: Double
    ) {
        self.name = name
        self.description = description
        self.startsAt = startsAt
        self.endsAt = endsAt
        self.enrolmentDeadline = enrolmentDeadline
        self.maxParticipants = maxParticipants
        self.path = path
        self.lengthMeters = lengthMeters
    }
}

/// An event locked for a change (`FOR UPDATE`), with the database's clock at the lock: what the
/// component's rule decides on. Enrolments lock the same row, so `participantCount` cannot change
/// meanwhile.
package struct LockedRunEvent: Sendable {
    package let event: RunEventRecord
    package let now: Date
    /// Whether the individual asking (for an enrolment or a withdrawal) runs in it.
    package let askerEnrolled: Bool
}

/// The public listing's time filter, as the component's phase rule gives it (every bound optional).
package struct RunEventWindow: Sendable {
    package var cancelled: Bool?
    package var startsAfter: Date?
    package var startsNoLaterThan: Date?
    package var endsNoEarlierThan: Date?
    package var endsBefore: Date?

    package init(
        cancelled: Bool? = nil, startsAfter: Date? = nil, startsNoLaterThan: Date? = nil, endsNoEarlierThan: Date? = nil, endsBefore: Date? = nil
    ) {
        self.cancelled = cancelled
        self.startsAfter = startsAfter
        self.startsNoLaterThan = startsNoLaterThan
        self.endsNoEarlierThan = endsNoEarlierThan
        self.endsBefore = endsBefore
    }
}

/// `run_events` and `run_participants`.
package struct RunEventStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    package func create(organiserId: Int64, _ draft: RunEventDraft) async throws -> RunEventRecord {
        let rows = try await database.query(
            """
            INSERT INTO run_events AS e (organiser_id, name, description, starts_at, ends_at, enrolment_deadline, max_participants, path, length_meters)
            VALUES (\(organiserId), \(draft.name), \(draft.description), \(draft.startsAt), \(draft.endsAt), \(draft.enrolmentDeadline),
                    \(Int32(draft.maxParticipants)), \(draft.path)::jsonb, \(draft.lengthMeters))
            RETURNING \(unescaped: RunEventRecord.columns)
            """)
        return try RunEventRecord(row: rows[0])
    }

    /// The event, for anyone (public data only is shown by the caller).
    package func event(publicId: UUID) async throws -> RunEventRecord? {
        try await database.query("SELECT \(unescaped: RunEventRecord.columns) FROM run_events e WHERE e.public_id = \(publicId)")
            .first.map(RunEventRecord.init(row:))
    }

    /// Replaces an event the organiser owns. `change` gets the event locked, decides whether it
    /// may change (the component's rule) and answers the whole new one.
    package func update(
        publicId: UUID, organiserId: Int64, change: (LockedRunEvent) throws -> RunEventDraft
    ) async throws -> RunEventRecord {
        try await database.withTransaction { connection in
            let locked = try await Self.lockedEvent(publicId, organiserId: organiserId, on: connection, logger: database.logger)
            let draft = try change(locked)
            let rows = try await connection.query(
                """
                UPDATE run_events e SET name = \(draft.name), description = \(draft.description), starts_at = \(draft.startsAt),
                    ends_at = \(draft.endsAt), enrolment_deadline = \(draft.enrolmentDeadline), max_participants = \(Int32(draft.maxParticipants)),
                    path = \(draft.path)::jsonb, length_meters = \(draft.lengthMeters), updated_at = now()
                WHERE e.id = \(locked.event.id)
                RETURNING \(unescaped: RunEventRecord.columns)
                """, logger: database.logger
            ).collect()
            try await Self.announceChange(of: publicId, on: connection, logger: database.logger)
            return try RunEventRecord(row: rows[0])
        }
    }

    /// Cancels an event the organiser owns when `decide` (the component's rule, given the event
    /// locked) says so — false: leave it as it is (already cancelled); every enrolled runner's
    /// device endpoint gets the message `notice` makes of it, in the same transaction.
    package func cancel(
        publicId: UUID, organiserId: Int64, decide: (LockedRunEvent) throws -> Bool, notice: (RunEventRecord) throws -> OutboxMessage
    ) async throws -> RunEventRecord {
        try await database.withTransaction { connection in
            let locked = try await Self.lockedEvent(publicId, organiserId: organiserId, on: connection, logger: database.logger)
            guard try decide(locked) else { return locked.event }
            let rows = try await connection.query(
                """
                UPDATE run_events e SET cancelled_at = now(), updated_at = now() WHERE e.id = \(locked.event.id)
                RETURNING \(unescaped: RunEventRecord.columns)
                """, logger: database.logger
            ).collect()
            let cancelled = try RunEventRecord(row: rows[0])
            try await WebhookOutbox.enqueue(
                try notice(cancelled), to: .runParticipants(runId: locked.event.id), on: connection, logger: database.logger)
            try await Self.announceChange(of: publicId, on: connection, logger: database.logger)
            return cancelled
        }
    }

    /// The events an individual organises or runs in, newest first (index: run_events_organiser_idx,
    /// run_participants_individual_idx).
    package func events(of individualId: Int64, role: RunRole?, beforeId: Int64?, limit: Int) async throws -> [RunEventRecord] {
        let organiser = role == nil || role == .organiser, participant = role == nil || role == .participant
        return try await database.query(
            """
            SELECT \(unescaped: RunEventRecord.columns) FROM run_events e
            WHERE ((\(organiser) AND e.organiser_id = \(individualId))
                   OR (\(participant) AND EXISTS (SELECT 1 FROM run_participants p WHERE p.run_id = e.id AND p.individual_id = \(individualId))))
              AND (\(beforeId)::int8 IS NULL OR e.id < \(beforeId))
            ORDER BY e.id DESC LIMIT \(limit)
            """
        ).map(RunEventRecord.init(row:))
    }

    /// Everyone's events within a time window, newest first.
    package func publicEvents(in window: RunEventWindow, beforeId: Int64?, limit: Int) async throws -> [RunEventRecord] {
        try await database.query(
            """
            SELECT \(unescaped: RunEventRecord.columns) FROM run_events e
            WHERE (\(window.cancelled)::bool IS NULL OR (e.cancelled_at IS NOT NULL) = \(window.cancelled))
              AND (\(window.startsAfter)::timestamptz IS NULL OR e.starts_at > \(window.startsAfter))
              AND (\(window.startsNoLaterThan)::timestamptz IS NULL OR e.starts_at <= \(window.startsNoLaterThan))
              AND (\(window.endsNoEarlierThan)::timestamptz IS NULL OR e.ends_at >= \(window.endsNoEarlierThan))
              AND (\(window.endsBefore)::timestamptz IS NULL OR e.ends_at < \(window.endsBefore))
              AND (\(beforeId)::int8 IS NULL OR e.id < \(beforeId))
            ORDER BY e.id DESC LIMIT \(limit)
            """
        ).map(RunEventRecord.init(row:))
    }

    /// The runners of an event, in enrolment order.
    package func runners(runId: Int64) async throws -> [RunnerRecord] {
        try await database.query(
            """
            SELECT runner_id, display_name, enrolled_at FROM run_participants WHERE run_id = \(runId) ORDER BY enrolled_at, runner_id
            """
        ).map { row in
            let (runner, name, at) = try row.decode((UUID, String, Date).self)
            return RunnerRecord(runnerId: runner, displayName: name, enrolledAt: at)
        }
    }

    /// Enrols an individual, once, when `decide` (the component's rule, given the event locked)
    /// allows it. The event row is locked for the decision and the insert, so two requests for
    /// the last place cannot both succeed.
    package func enrol(
        publicId: UUID, individualId: Int64, displayName: String, decide: (LockedRunEvent) throws -> Void
    ) async throws -> RunnerRecord {
        try await database.withTransaction { connection in
            let locked = try await Self.lockedEvent(publicId, asker: individualId, on: connection, logger: database.logger)
            try decide(locked)
            let rows = try await connection.query(
                """
                INSERT INTO run_participants (run_id, individual_id, display_name)
                VALUES (\(locked.event.id), \(individualId), \(displayName))
                ON CONFLICT (run_id, individual_id) DO NOTHING
                RETURNING runner_id, display_name, enrolled_at
                """, logger: database.logger
            ).collect()
            guard let row = rows.first else { throw RunRefusal.alreadyEnrolled }
            let (runner, name, at) = try row.decode((UUID, String, Date).self)
            try await Self.announceChange(of: publicId, on: connection, logger: database.logger)
            return RunnerRecord(runnerId: runner, displayName: name, enrolledAt: at)
        }
    }

    /// Withdraws an enrolment when `decide` (the component's rule) allows it.
    package func withdraw(publicId: UUID, individualId: Int64, decide: (LockedRunEvent) throws -> Void) async throws {
        try await database.withTransaction { connection in
            let locked = try await Self.lockedEvent(publicId, asker: individualId, on: connection, logger: database.logger)
            try decide(locked)
            let rows = try await connection.query(
                """
                DELETE FROM run_participants WHERE run_id = \(locked.event.id) AND individual_id = \(individualId) RETURNING 1
                """, logger: database.logger
            ).collect()
            if rows.isEmpty { throw RunRefusal.notEnrolled }
            try await Self.announceChange(of: publicId, on: connection, logger: database.logger)
        }
    }

    /// Tells every instance's live view, at commit, that the event or its roster changed
    /// (`{ "runId", "event": true }` on `RunPositionStore.channel`): spectators get a new snapshot.
    private static func announceChange(of publicId: UUID, on connection: LeasedConnection, logger: Logger) async throws {
        try await connection.query(
            """
            SELECT pg_notify(\(RunPositionStore.channel), json_build_object('runId', \(publicId)::uuid, 'event', true)::text)
            """, logger: logger)
    }

    /// The event locked `FOR UPDATE` (only the organiser's when `organiserId` is given), with the
    /// database's clock and whether `asker` runs in it.
    private static func lockedEvent(
        _ publicId: UUID, organiserId: Int64? = nil, asker: Int64? = nil, on connection: LeasedConnection, logger: Logger
    ) async throws -> LockedRunEvent {
        let rows = try await connection.query(
            """
            SELECT \(unescaped: RunEventRecord.columns), now(),
                   EXISTS (SELECT 1 FROM run_participants p WHERE p.run_id = e.id AND p.individual_id = \(asker))
            FROM run_events e
            WHERE e.public_id = \(publicId) AND (\(organiserId)::int8 IS NULL OR e.organiser_id = \(organiserId))
            FOR UPDATE
            """, logger: logger
        ).collect()
        guard let row = rows.first else { throw RunRefusal.notFound }
        let cells = row.makeRandomAccess()
        return LockedRunEvent(
            event: try RunEventRecord(row: row), now: try cells[15].decode(Date.self), askerEnrolled: try cells[16].decode(Bool.self))
    }
}
