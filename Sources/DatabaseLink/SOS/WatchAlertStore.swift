import Data4HelpCore
import Foundation
import Logging
import PostgresNIO

/// `watch_alerts`: what watch rules raised, for their individual; and the queries the detector
/// runs inside an ingest transaction.
package struct WatchAlertStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// The select list (alias `a`, the rule joined as `r`).
    static let columns = """
        a.id, a.public_id, r.public_id, a.rule_name, a.sample_type, a.severity, a.condition, a.episode_first_ms, a.episode_last_ms,
        a.readings::text, a.raised_at, a.updated_at, a.acknowledged_at
        """

    /// Newest first.
    package func alerts(individualId: Int64, limit: Int, before: Int64?) async throws -> [WatchAlert] {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns) FROM watch_alerts a LEFT JOIN watch_rules r ON r.id = a.rule_id
            WHERE a.individual_id = \(individualId) AND a.id < \(before ?? Int64.max)
            ORDER BY a.id DESC LIMIT \(limit)
            """)
        return try rows.map(Self.alert)
    }

    package func alert(_ publicId: UUID, individualId: Int64) async throws -> WatchAlert? {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns) FROM watch_alerts a LEFT JOIN watch_rules r ON r.id = a.rule_id
            WHERE a.public_id = \(publicId) AND a.individual_id = \(individualId)
            """)
        return try rows.first.map(Self.alert)
    }

    /// Marks an alert seen (the first time only); nil when it is not the individual's.
    package func acknowledge(_ publicId: UUID, individualId: Int64) async throws -> WatchAlert? {
        let rows = try await database.query(
            """
            WITH acknowledged AS (
                UPDATE watch_alerts SET acknowledged_at = COALESCE(acknowledged_at, clock_timestamp())
                WHERE public_id = \(publicId) AND individual_id = \(individualId)
                RETURNING *
            )
            SELECT \(unescaped: Self.columns) FROM acknowledged a LEFT JOIN watch_rules r ON r.id = a.rule_id
            """)
        return try rows.first.map(Self.alert)
    }

    static func alert(_ row: PostgresRow) throws -> WatchAlert {
        let cells = row.makeRandomAccess()
        func cell<T: PostgresDecodable>(_ index: Int, as type: T.Type = T.self) throws -> T { try cells[index].decode(T.self) }
        guard let severity = AlertSeverity(rawValue: try cell(5, as: String.self)) else { throw StoredValueError(column: "watch_alerts.severity") }
        let readings = try JSONDecoder().decode([AlertReading].self, from: Data(try cell(9, as: String.self).utf8))
        return WatchAlert(
            sequence: try cell(0), publicId: try cell(1), rulePublicId: try cell(2), ruleName: try cell(3), typeCode: try cell(4),
            severity: severity, condition: try cell(6), episodeFirstMs: try cell(7), episodeLastMs: try cell(8), readings: readings,
            raisedAt: try cell(10), updatedAt: try cell(11), acknowledgedAt: try cell(12))
    }
}

/// An alert just raised, as the individual's device is told of it.
package struct RaisedAlert: Sendable, Equatable {
    package let publicId: UUID
    package let raisedAt: Date
}

/// A carer who receives a rule's alerts, through an accepted care link.
package struct AlertCarer: Sendable {
    package let linkId: Int64
    package let linkPublicId: UUID
    package let carerId: Int64
    /// The person the alert is about, as the carer knows them.
    package let personName: String
}

/// What the detector does with an episode it found.
package enum EpisodeOutcome: Sendable, Equatable {
    /// A new alert.
    case raised(RaisedAlert)
    /// An alert of the same episode grew to include it.
    case extended
    /// The rule's throttle held it back.
    case throttled
}

/// The Anomaly Detection module's queries, inside an ingest transaction.
package enum WatchRuleDetection {
    /// Records an episode of `rule`: an alert of the rule that overlaps it grows to cover it
    /// (keeping the latest `WatchAlert.keptReadings` readings); else, unless the rule raised an
    /// alert within its throttle, a new alert — and, when the rule says so, the individual's
    /// device endpoint gets the message `notice` makes of it, in the same transaction.
    package static func record(
        episode readings: [StoredReading], of rule: WatchRule, condition: String, in transaction: IngestTransaction,
        notice: (RaisedAlert) throws -> OutboxMessage
    ) async throws -> EpisodeOutcome {
        guard let first = readings.first?.timeMs, let last = readings.last?.timeMs else { return .throttled }
        let kept = String(
            decoding: try JSONEncoder().encode(readings.suffix(WatchAlert.keptReadings).map { AlertReading(timeMs: $0.timeMs, value: $0.value) }),
            as: UTF8.self)
        let settings = rule.settings
        let rows = try await transaction.connection.query(
            """
            WITH covering AS (   -- index: watch_alerts_rule_idx
                UPDATE watch_alerts a SET
                    episode_first_ms = least(a.episode_first_ms, \(first)), episode_last_ms = greatest(a.episode_last_ms, \(last)),
                    updated_at = clock_timestamp(),
                    readings = (
                        SELECT jsonb_agg(x ORDER BY (x ->> 'timeMs')::int8)
                        FROM (SELECT DISTINCT ON ((x ->> 'timeMs')::int8) x
                              FROM jsonb_array_elements(a.readings || \(kept)::jsonb) AS e(x)
                              ORDER BY (x ->> 'timeMs')::int8 DESC LIMIT \(Int32(WatchAlert.keptReadings))) t)
                WHERE a.rule_id = \(rule.sequence) AND a.episode_first_ms <= \(last) AND a.episode_last_ms >= \(first)
                RETURNING a.id
            ),
            recent AS (
                SELECT 1 FROM watch_alerts
                WHERE rule_id = \(rule.sequence) AND raised_at > clock_timestamp() - \(Int32(clamping: settings.throttleSeconds)) * interval '1 second'
            ),
            raised AS (
                INSERT INTO watch_alerts (individual_id, rule_id, rule_name, sample_type, severity, condition, episode_first_ms,
                                          episode_last_ms, readings, received_at)
                SELECT \(transaction.individualId), \(rule.sequence), \(settings.name), \(settings.typeCode), \(settings.severity.rawValue),
                       \(condition), \(first), \(last), \(kept)::jsonb, \(transaction.receivedAt)
                WHERE NOT EXISTS (SELECT 1 FROM covering) AND NOT EXISTS (SELECT 1 FROM recent)
                RETURNING public_id, raised_at
            )
            SELECT 'raised', public_id, raised_at FROM raised
            UNION ALL
            SELECT 'extended', NULL, NULL FROM covering
            """, logger: transaction.logger)
        var outcome = EpisodeOutcome.throttled
        for row in try await rows.collect() {  // read whole before the connection runs the next statement
            let (kind, id, raisedAt) = try row.decode((String, UUID?, Date?).self)
            if kind == "raised", let id, let raisedAt {
                let alert = RaisedAlert(publicId: id, raisedAt: raisedAt)
                if settings.notifyDevice {
                    try await WebhookOutbox.enqueue(
                        try notice(alert), to: .endpoint(of: .individual(transaction.individualId)), on: transaction.connection,
                        logger: transaction.logger)
                }
                return .raised(alert)
            }
            outcome = .extended
        }
        return outcome
    }

    /// Tells the carers who receive `rule`'s alerts of a new one: each carer's device endpoint
    /// gets the message `notice` makes for them, and the person's access log records it (channel
    /// `carer`), in the ingest transaction. Answers how many carers were told.
    @discardableResult
    package static func tellCarers(
        of rule: WatchRule, typeName: String, in transaction: IngestTransaction, notice: (AlertCarer) throws -> OutboxMessage
    ) async throws -> Int {
        let rows = try await transaction.connection.query(
            """
            SELECT l.id, l.public_id, l.carer_id, p.full_name
            FROM care_link_rules lr   -- index: care_link_rules_rule_idx
            JOIN care_links l ON l.id = lr.link_id AND l.status = 'accepted'
            JOIN individuals p ON p.id = l.individual_id
            WHERE lr.rule_id = \(rule.sequence)
            ORDER BY l.id
            """, logger: transaction.logger
        ).collect()
        for row in rows {
            let (linkId, linkPublicId, carerId, personName) = try row.decode((Int64, UUID, Int64, String).self)
            let carer = AlertCarer(linkId: linkId, linkPublicId: linkPublicId, carerId: carerId, personName: personName)
            try await WebhookOutbox.enqueue(
                try notice(carer), to: .endpoint(of: .individual(carerId)), on: transaction.connection, logger: transaction.logger)
            try await transaction.connection.query(
                """
                INSERT INTO disclosures (individual_id, care_link_id, channel, types, item_count)
                VALUES (\(transaction.individualId), \(linkId), 'carer', ARRAY[\(typeName)]::text[], 1)
                """, logger: transaction.logger)
        }
        return rows.count
    }
}
