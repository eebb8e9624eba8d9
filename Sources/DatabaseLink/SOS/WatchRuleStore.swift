import Data4HelpCore
import Foundation
import PostgresNIO

/// `watch_rules`: an individual's watch rules. Every statement names the individual, so another
/// individual's rule is simply not found.
package struct WatchRuleStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// The select list (alias `r`), spliced into the queries below.
    static let columns = """
        r.id, r.public_id, r.name, r.template, r.sample_type, r.comparison, r.low_value, r.high_value, r.persistence,
        r.readings, r.duration_ms, r.active_from, r.active_to, r.severity, r.notify_device, r.throttle_seconds, r.enabled,
        r.created_at, r.updated_at
        """

    package func rules(individualId: Int64, limit: Int, before: Int64?) async throws -> [WatchRule] {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns) FROM watch_rules r
            WHERE r.individual_id = \(individualId) AND r.id < \(before ?? Int64.max)
            ORDER BY r.id DESC LIMIT \(limit)
            """)
        return try rows.map(Self.rule)
    }

    package func rule(_ publicId: UUID, individualId: Int64) async throws -> WatchRule? {
        let rows = try await database.query(
            "SELECT \(unescaped: Self.columns) FROM watch_rules r WHERE r.public_id = \(publicId) AND r.individual_id = \(individualId)")
        return try rows.first.map(Self.rule)
    }

    /// Stores a new rule; at most `maximum` per individual (nil when that many exist: the count
    /// and the insert are one statement, under the individual's ingest lock so that two requests
    /// cannot both take the last place).
    package func insert(_ settings: WatchRuleSettings, individualId: Int64, maximum: Int) async throws -> WatchRule? {
        try await database.withTransaction { connection in
            _ = try await connection.query(
                "SELECT pg_advisory_xact_lock(hashtextextended('data4help.ingest', \(individualId)))", logger: database.logger)
            let values = Self.Values(settings)
            let rows = try await connection.query(
                """
                INSERT INTO watch_rules AS r (individual_id, name, template, sample_type, comparison, low_value, high_value, persistence,
                                              readings, duration_ms, active_from, active_to, severity, notify_device, throttle_seconds, enabled)
                SELECT \(individualId), \(settings.name), \(settings.template), \(settings.typeCode), \(values.comparison), \(values.low),
                       \(values.high), \(values.persistence), \(values.readings), \(values.durationMs), \(values.activeFrom), \(values.activeTo),
                       \(settings.severity.rawValue), \(settings.notifyDevice), \(Int32(clamping: settings.throttleSeconds)), \(settings.enabled)
                WHERE (SELECT count(*) FROM watch_rules WHERE individual_id = \(individualId)) < \(maximum)
                RETURNING \(unescaped: Self.columns)
                """, logger: database.logger)
            for try await row in rows { return try Self.rule(row) }
            return nil
        }
    }

    /// Replaces a rule's settings (its template stays); nil when it is not the individual's.
    package func replace(_ publicId: UUID, with settings: WatchRuleSettings, individualId: Int64) async throws -> WatchRule? {
        let values = Self.Values(settings)
        let rows = try await database.query(
            """
            UPDATE watch_rules r SET
                name = \(settings.name), sample_type = \(settings.typeCode), comparison = \(values.comparison), low_value = \(values.low),
                high_value = \(values.high), persistence = \(values.persistence), readings = \(values.readings),
                duration_ms = \(values.durationMs), active_from = \(values.activeFrom), active_to = \(values.activeTo),
                severity = \(settings.severity.rawValue), notify_device = \(settings.notifyDevice),
                throttle_seconds = \(Int32(clamping: settings.throttleSeconds)), enabled = \(settings.enabled), updated_at = clock_timestamp()
            WHERE r.public_id = \(publicId) AND r.individual_id = \(individualId)
            RETURNING \(unescaped: Self.columns)
            """)
        return try rows.first.map(Self.rule)
    }

    /// Deletes a rule; its alerts stay (with the rule's name). False when it is not the individual's.
    package func delete(_ publicId: UUID, individualId: Int64) async throws -> Bool {
        let rows = try await database.query(
            "DELETE FROM watch_rules WHERE public_id = \(publicId) AND individual_id = \(individualId) RETURNING id")
        return !rows.isEmpty
    }

    /// The settings as columns.
    struct Values {
        var comparison: String
        var low: Float?
        var high: Float?
        var persistence: String
        var readings: Int16?
        var durationMs: Int64?
        var activeFrom: Int16?
        var activeTo: Int16?

        init(_ settings: WatchRuleSettings) {
            switch settings.comparison {
            case .below(let bound): (comparison, low, high) = ("below", bound, nil)
            case .above(let bound): (comparison, low, high) = ("above", nil, bound)
            case .outside(let lower, let upper): (comparison, low, high) = ("outside", lower, upper)
            }
            switch settings.persistence {
            case .consecutive(let count): (persistence, readings, durationMs) = ("consecutive", Int16(clamping: count), nil)
            case .sustained(let duration): (persistence, readings, durationMs) = ("sustained", nil, duration)
            case .aggregate(let statistic, let window): (persistence, readings, durationMs) = (statistic.rawValue, nil, window)
            }
            activeFrom = settings.activeHours.map { Int16(clamping: $0.fromMinute) }
            activeTo = settings.activeHours.map { Int16(clamping: $0.toMinute) }
        }
    }

    static func rule(_ row: PostgresRow) throws -> WatchRule { try rule(row, from: 0) }

    /// A row of `columns`, from the row's column `offset` on. A value the table's checks let
    /// through but this build cannot read (a future severity, say) is a decoding error, not a guess.
    static func rule(_ row: PostgresRow, from offset: Int) throws -> WatchRule {
        let cells = row.makeRandomAccess()
        func cell<T: PostgresDecodable>(_ index: Int, as type: T.Type = T.self) throws -> T { try cells[offset + index].decode(T.self) }
        let comparison: WatchComparison
        switch (try cell(5, as: String.self), try cell(6, as: Float?.self), try cell(7, as: Float?.self)) {
        case ("below", let low?, _): comparison = .below(low)
        case ("above", _, let high?): comparison = .above(high)
        case ("outside", let low?, let high?): comparison = .outside(low: low, high: high)
        default: throw StoredValueError(column: "watch_rules.comparison")
        }
        let persistence: WatchPersistence
        switch (try cell(8, as: String.self), try cell(9, as: Int16?.self), try cell(10, as: Int64?.self)) {
        case ("consecutive", let count?, _): persistence = .consecutive(Int(count))
        case ("sustained", _, let duration?): persistence = .sustained(milliseconds: duration)
        case (let name, _, let window?):
            guard let statistic = WatchAggregate(rawValue: name) else { throw StoredValueError(column: "watch_rules.persistence") }
            persistence = .aggregate(statistic, windowMs: window)
        default: throw StoredValueError(column: "watch_rules.persistence")
        }
        let hours: ActiveHours? =
            switch (try cell(11, as: Int16?.self), try cell(12, as: Int16?.self)) {
            case (let from?, let to?): ActiveHours(fromMinute: Int(from), toMinute: Int(to))
            default: nil
            }
        guard let severity = AlertSeverity(rawValue: try cell(13, as: String.self)) else { throw StoredValueError(column: "watch_rules.severity") }
        let settings = WatchRuleSettings(
            name: try cell(2), typeCode: try cell(4), comparison: comparison, persistence: persistence, activeHours: hours, severity: severity,
            notifyDevice: try cell(14), throttleSeconds: Int(try cell(15, as: Int32.self)), enabled: try cell(16), template: try cell(3))
        return WatchRule(sequence: try cell(0), publicId: try cell(1), settings: settings, createdAt: try cell(17), updatedAt: try cell(18))
    }
}

/// A stored value this build does not understand.
package struct StoredValueError: Error, Sendable, Equatable {
    package var column: String
}
