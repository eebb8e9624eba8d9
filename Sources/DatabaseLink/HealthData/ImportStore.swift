import Data4HelpCore
import Foundation
import Logging
import PostgresNIO

/// An import a worker has claimed: it owns it while its lease runs and `attempt` is current.
package struct ClaimedImport: Sendable, Equatable {
    package let id: Int64
    package let publicId: UUID
    package let individualId: Int64
    package let format: ImportFormat
    /// Which claim this is: a commit of an older claim (a worker that lost its lease) is refused.
    package let attempt: Int32
    /// The claims so far that ended without a word (a worker that died or lost its lease), this
    /// one included: claims given back after following an upload are not counted.
    package let tries: Int32
    /// The file was still arriving when claimed: the worker follows the upload.
    package let uploading: Bool
    /// Where the last commit left the reading (JSON), nil at the start.
    package let checkpoint: String?
    package let figures: String
    package let bytesProcessed: Int64
    package let records: Int64
    package let bytesReceived: Int64
}

/// What a worker commits with a batch of an import's data, in the same transaction.
package struct ImportProgress: Sendable, Equatable {
    package var checkpoint: String?
    package var figures: String
    package var bytesProcessed: Int64
    package var records: Int64

    package init(checkpoint: String?, figures: String, bytesProcessed: Int64, records: Int64) {
        self.checkpoint = checkpoint
        self.figures = figures
        self.bytesProcessed = bytesProcessed
        self.records = records
    }
}

/// The claim of a worker is no longer current: the import was cancelled, or another worker took
/// it over after this one's lease ran out. The batch being committed is rolled back.
package struct ImportClaimLost: Error, Equatable, Sendable {}

/// What an import that ends (done, failed, cancelled) announces to its individual's subscribed
/// grants, decided by HealthSharing from the import's final figures (JSON) and those grants; the
/// store writes the events in the transaction that ends the import.
package typealias ImportAnnouncement = @Sendable (_ figures: String, _ grants: [SubscribedGrant]) throws -> [ImportedDataEvent]

/// The `imports` jobs and their files' chunks.
package struct ImportStore: Sendable {
    /// Notified (by a trigger) whenever an import is queued.
    package static let channel = "data4help_imports"

    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// An upload a worker may follow: an `export.xml` (a ZIP is read from its end) that no
    /// worker holds. Written once for `append`'s wake-up and `claim`.
    private static let followable = "format = 'apple-health-xml' AND (lease_until IS NULL OR lease_until < now())"

    private static let columns = """
        id, public_id, format, state, created_at, uploaded_at, started_at, finished_at,
        bytes_received, bytes_processed, records, figures::text, failure
        """

    private static func record(_ row: PostgresRow) throws -> ImportRecord {
        let (id, publicId, format, state, createdAt, uploadedAt, startedAt, finishedAt, received, processed, records, figures, failure) =
            try row.decode(
                (Int64, UUID, ImportFormat, ImportState, Date, Date?, Date?, Date?, Int64, Int64, Int64, String, String?).self
            )
        return ImportRecord(
            id: id, publicId: publicId, format: format, state: state, createdAt: createdAt, uploadedAt: uploadedAt, startedAt: startedAt,
            finishedAt: finishedAt, bytesReceived: received, bytesProcessed: processed, records: records, figures: figures, failure: failure
        )
    }

    /// A new import of `format`, receiving its file.
    package func create(individualId: Int64, format: ImportFormat) async throws -> ImportRecord {
        let rows = try await database.query(
            """
            INSERT INTO imports (individual_id, format) VALUES (\(individualId), \(format)) RETURNING \(unescaped: Self.columns)
            """)
        return try Self.record(rows[0])
    }

    /// Adds `bytes` at `offset` of the file, which must be where the bytes received end, and
    /// commits them: answers the new end. When an import that a worker may follow
    /// (`followAhead`, `claim`) gets that far ahead of its reading, the workers are woken.
    package func append(
        _ publicId: UUID, individualId: Int64, at offset: Int64, bytes: [UInt8], limit: Int64, followAhead: Int64
    ) async throws -> Int64 {
        try await database.withTransaction { connection in
            let rows = try await connection.query(
                """
                SELECT id, state, bytes_received,
                       -- the next chunk's number: one probe of the primary key's end, not a count of every chunk
                       coalesce((SELECT max(c.seq) + 1 FROM import_chunks c WHERE c.import_id = i.id), 0)::int4,
                       -- where a worker following it would start, if none is
                       CASE WHEN \(unescaped: Self.followable) THEN bytes_processed END
                FROM imports i WHERE public_id = \(publicId) AND individual_id = \(individualId) FOR UPDATE
                """, logger: database.logger)
            guard let row = try await rows.collect().first else { throw ImportUploadRefusal.notFound }
            let (id, state, received, chunks, unfollowed) = try row.decode((Int64, ImportState, Int64, Int32, Int64?).self)
            guard state == .uploading else { throw ImportUploadRefusal.notUploading(state) }
            guard offset == received else { throw ImportUploadRefusal.offsetMismatch(expected: received) }
            let (end, overflow) = received.addingReportingOverflow(Int64(bytes.count))
            guard !overflow, end <= limit else { throw ImportUploadRefusal.tooLarge(limit: limit) }
            guard !bytes.isEmpty else { return received }
            _ = try await connection.query(
                """
                INSERT INTO import_chunks (import_id, seq, position, bytes) VALUES (\(id), \(chunks), \(received), \(ByteBuffer(bytes: bytes)));
                """, logger: database.logger)
            _ = try await connection.query("UPDATE imports SET bytes_received = \(end) WHERE id = \(id)", logger: database.logger)
            // Woken once, when the bytes ahead of its reading reach `followAhead`.
            let threshold = unfollowed.map { $0.addingReportingOverflow(followAhead) }
            if let threshold, !threshold.overflow, received < threshold.partialValue, end >= threshold.partialValue {
                _ = try await connection.query("SELECT pg_notify(\(Self.channel), \(String(id)))", logger: database.logger)
            }
            return end
        }
    }

    /// The file is whole: queue the import for a worker, or — if a worker is following the upload
    /// — it is running. Nil if there is no such import; an import no longer uploading is
    /// answered as it is.
    package func complete(_ publicId: UUID, individualId: Int64) async throws -> ImportRecord? {
        let rows = try await database.query(
            """
            UPDATE imports SET state = CASE WHEN lease_until > now() THEN 'running' ELSE 'queued' END, uploaded_at = now()
            WHERE public_id = \(publicId) AND individual_id = \(individualId) AND state = 'uploading'
            RETURNING \(unescaped: Self.columns)
            """)
        if let row = rows.first { return try Self.record(row) }
        return try await find(publicId, individualId: individualId)
    }

    /// Refuses an upload that went wrong (too large, not readable at all): failed, chunks gone.
    package func refuseUpload(_ publicId: UUID, individualId: Int64, reason: String) async throws {
        try await database.withTransaction { connection in
            let rows = try await connection.query(
                """
                UPDATE imports SET state = 'failed', failure = \(reason), finished_at = now()
                WHERE public_id = \(publicId) AND individual_id = \(individualId) AND state = 'uploading' RETURNING id
                """, logger: database.logger)
            for try await id in rows.decode(Int64.self) {
                _ = try await connection.query("DELETE FROM import_chunks WHERE import_id = \(id)", logger: database.logger)
            }
        }
    }

    package func find(_ publicId: UUID, individualId: Int64) async throws -> ImportRecord? {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns) FROM imports WHERE public_id = \(publicId) AND individual_id = \(individualId)
            """)
        return try rows.first.map(Self.record)
    }

    /// The individual's imports, newest first.
    package func list(individualId: Int64, limit: Int) async throws -> [ImportRecord] {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns) FROM imports WHERE individual_id = \(individualId) ORDER BY id DESC LIMIT \(Int64(limit))
            """)  // index: imports_individual_idx
        return try rows.map(Self.record)
    }

    /// Stops an import that is not over: what was committed stays; the file is deleted. Nil if
    /// there is no such import; one already over is answered as it is.
    package func cancel(_ publicId: UUID, individualId: Int64, announcing: ImportAnnouncement) async throws -> ImportRecord? {
        try await database.withTransaction { connection in
            let rows = try await connection.query(
                """
                UPDATE imports SET state = 'cancelled', finished_at = now(), lease_until = NULL
                WHERE public_id = \(publicId) AND individual_id = \(individualId) AND state IN ('uploading', 'queued', 'running')
                RETURNING id, figures::text
                """, logger: database.logger)
            for try await (id, figures) in rows.decode((Int64, String).self) {
                _ = try await connection.query("DELETE FROM import_chunks WHERE import_id = \(id)", logger: database.logger)
                try await Self.announce(figures, individualId: individualId, announcing: announcing, on: connection, logger: database.logger)
                try await Self.requestCompaction(importId: id, on: connection, logger: database.logger)
            }
        }
        return try await find(publicId, individualId: individualId)
    }

    // MARK: - Workers

    /// Claims the oldest queued import, a running one whose worker's lease ran out (it died), or
    /// else an `export.xml` still uploading that has `followAhead` bytes or more beyond where its
    /// reading stands and nobody following it (it stays `uploading`), for `leaseFor`; the worker
    /// renews the lease with every commit (and, following, with every look for more).
    ///
    /// An import another worker is claiming is skipped (`SKIP LOCKED`), except an upload: each of
    /// its chunks is appended with its row locked, which during a fast upload is nearly all the
    /// time, so skipping it missed the one wake-up its upload sends and left it unread until the
    /// upload ended (`bench import` showed rounds with nothing read during the upload). That
    /// claim waits for the chunk's commit instead, then sees the row as committed: if another
    /// worker took it meanwhile, it is no longer followable and nothing is claimed.
    package func claim(leaseFor: Duration, followAhead: Int64) async throws -> ClaimedImport? {
        let seconds = Double(leaseFor.components.seconds)
        let queued = try await database.query(
            """
            UPDATE imports SET state = 'running', attempts = attempts + 1, started_at = coalesce(started_at, now()),
                               lease_until = now() + make_interval(secs => \(seconds))
            WHERE id = (
                SELECT id FROM imports WHERE state = 'queued' OR (state = 'running' AND lease_until < now())
                ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
            RETURNING \(unescaped: Self.claimed)
            """)  // index: imports_queue_idx
        if let row = queued.first { return try Self.claim(row) }
        let upload = try await database.query(
            """
            UPDATE imports SET attempts = attempts + 1, started_at = coalesce(started_at, now()),
                               lease_until = now() + make_interval(secs => \(seconds))
            WHERE id = (
                SELECT id FROM imports
                WHERE state = 'uploading' AND \(unescaped: Self.followable) AND bytes_received - bytes_processed >= \(followAhead)
                ORDER BY id LIMIT 1 FOR UPDATE)
            RETURNING \(unescaped: Self.claimed)
            """)  // index: imports_queue_idx
        return try upload.first.map(Self.claim)
    }

    /// What a claim answers (`claim(_:)`).
    private static let claimed = """
        id, public_id, individual_id, format, attempts, attempts - released, state = 'uploading',
        checkpoint::text, figures::text, bytes_processed, records, bytes_received
        """

    private static func claim(_ row: PostgresRow) throws -> ClaimedImport {
        let (id, publicId, individualId, format, attempt, tries, uploading, checkpoint, figures, processed, records, received) = try row.decode(
            (Int64, UUID, Int64, ImportFormat, Int32, Int32, Bool, String?, String, Int64, Int64, Int64).self
        )
        return ClaimedImport(
            id: id, publicId: publicId, individualId: individualId, format: format, attempt: attempt, tries: tries, uploading: uploading,
            checkpoint: checkpoint, figures: figures, bytesProcessed: processed, records: records, bytesReceived: received
        )
    }

    /// For a worker following an upload: renews its lease and answers where the bytes received
    /// end and whether more are to come. Throws `ImportClaimLost` if the claim is no longer
    /// current (the import was cancelled or refused, or another worker took it over).
    package func follow(_ claim: ClaimedImport, leaseFor: Duration) async throws -> (bytesReceived: Int64, uploading: Bool) {
        let seconds = Double(leaseFor.components.seconds)
        let rows = try await database.query(
            """
            UPDATE imports SET lease_until = now() + make_interval(secs => \(seconds)),
                               state = CASE WHEN state = 'queued' THEN 'running' ELSE state END
            WHERE id = \(claim.id) AND attempts = \(claim.attempt) AND state IN ('uploading', 'queued', 'running')
            RETURNING bytes_received, state = 'uploading'
            """)
        guard let row = rows.first else { throw ImportClaimLost() }
        return try row.decode((Int64, Bool).self)
    }

    /// Gives back the claim of an import whose upload has paused (its reading caught up and
    /// committed): another claim takes it up once more has arrived. False if the upload has
    /// ended meanwhile (the claim stays: read on) or the claim is lost.
    package func release(_ claim: ClaimedImport) async throws -> Bool {
        let rows = try await database.query(
            """
            UPDATE imports SET lease_until = NULL, released = released + 1
            WHERE id = \(claim.id) AND attempts = \(claim.attempt) AND state = 'uploading'
            RETURNING 1
            """)
        return rows.first != nil
    }

    /// The chunk of the file that holds byte `offset`: its first byte's offset and its bytes.
    package func chunk(of importId: Int64, holding offset: Int64) async throws -> (position: Int64, bytes: ByteBuffer)? {
        let rows = try await database.query(
            """
            SELECT position, bytes FROM import_chunks
            WHERE import_id = \(importId) AND position <= \(offset) ORDER BY seq DESC LIMIT 1
            """)
        guard let row = rows.first else { return nil }
        let (position, bytes) = try row.decode((Int64, ByteBuffer).self)
        guard offset < position + Int64(bytes.readableBytes) else { return nil }
        return (position, bytes)
    }

    /// Records a batch's progress inside the transaction that stores the batch: it commits with
    /// the data or not at all. Throws `ImportClaimLost` (rolling the batch back) if the claim
    /// is no longer current.
    package func recordProgress(
        _ progress: ImportProgress, of claim: ClaimedImport, leaseFor: Duration, in transaction: IngestTransaction
    ) async throws {
        let seconds = Double(leaseFor.components.seconds)
        let rows = try await transaction.connection.query(
            """
            UPDATE imports SET checkpoint = \(progress.checkpoint)::jsonb, figures = \(progress.figures)::jsonb,
                               bytes_processed = \(progress.bytesProcessed), records = \(progress.records),
                               lease_until = now() + make_interval(secs => \(seconds))
            WHERE id = \(claim.id) AND state IN ('uploading', 'running') AND attempts = \(claim.attempt)
            RETURNING 1
            """, logger: transaction.logger)
        guard try await rows.collect().count == 1 else { throw ImportClaimLost() }
    }

    /// The import is read whole: done, with its final figures; the file is deleted.
    package func finish(_ claim: ClaimedImport, progress: ImportProgress, announcing: ImportAnnouncement) async throws {
        try await end(claim, state: .done, failure: nil, progress: progress, announcing: announcing)
    }

    /// The import cannot go on (`reason`, in words for its owner); what was committed stays.
    package func fail(_ claim: ClaimedImport, reason: String, announcing: ImportAnnouncement) async throws {
        try await end(claim, state: .failed, failure: reason, progress: nil, announcing: announcing)
    }

    private func end(
        _ claim: ClaimedImport, state: ImportState, failure: String?, progress: ImportProgress?, announcing: ImportAnnouncement
    ) async throws {
        try await database.withTransaction { connection in
            let rows = try await connection.query(
                """
                UPDATE imports SET state = \(state), failure = \(failure), finished_at = now(), lease_until = NULL,
                                   figures = coalesce(\(progress?.figures)::jsonb, figures),
                                   bytes_processed = coalesce(\(progress?.bytesProcessed), bytes_processed),
                                   records = coalesce(\(progress?.records), records), checkpoint = NULL
                WHERE id = \(claim.id) AND state IN ('uploading', 'running') AND attempts = \(claim.attempt)
                RETURNING figures::text
                """, logger: database.logger)
            guard let figures = try await rows.collect().first?.decode(String.self) else { throw ImportClaimLost() }
            _ = try await connection.query("DELETE FROM import_chunks WHERE import_id = \(claim.id)", logger: database.logger)
            try await Self.announce(figures, individualId: claim.individualId, announcing: announcing, on: connection, logger: database.logger)
            try await Self.requestCompaction(importId: claim.id, on: connection, logger: database.logger)
        }
    }

    /// Asks the compactor to compact the span of time the import stored data in (its figures'
    /// spans, every kind), widening the individual's request if there is one (migration 0051).
    private static func requestCompaction(importId: Int64, on connection: LeasedConnection, logger: Logger) async throws {
        _ = try await connection.query(
            """
            INSERT INTO compaction_requests (individual_id, from_at, before_at)
            SELECT i.individual_id, min('epoch'::timestamptz + (s.span->>'firstMs')::int8 * interval '1 millisecond'),
                   max('epoch'::timestamptz + ((s.span->>'lastMs')::int8 + 1) * interval '1 millisecond')
            FROM imports i CROSS JOIN LATERAL jsonb_each(COALESCE(i.figures->'spans', '{}'::jsonb)) AS s(kind, span)
            WHERE i.id = \(importId)
            GROUP BY i.individual_id
            ON CONFLICT (individual_id) DO UPDATE SET
                from_at = LEAST(compaction_requests.from_at, EXCLUDED.from_at),
                before_at = GREATEST(compaction_requests.before_at, EXCLUDED.before_at)
            """, logger: logger)
    }

    private static func announce(
        _ figures: String, individualId: Int64, announcing: ImportAnnouncement, on connection: LeasedConnection, logger: Logger
    ) async throws {
        let grants = try await PartyEventStore.subscribedGrants(individualId: individualId, on: connection, logger: logger)
        guard !grants.isEmpty else { return }
        try await PartyEventStore.insertImported(try announcing(figures, grants), individualId: individualId, on: connection, logger: logger)
    }
}
