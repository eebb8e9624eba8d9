import Foundation
import PostgresNIO
import Synchronization

/// Creates the monthly partitions of the time-partitioned tables before rows need them.
///
/// Months already ensured by this process are remembered, so the common case — data for the
/// current month — costs no query. A new month, or a sample synced years late, costs one call
/// of `data4help_ensure_month_partitions` (idempotent, serialised in the database).
package final class PartitionMaintainer: Sendable {
    /// The partitioned tables, by name (constants, spliced into no SQL: passed as `regclass`).
    package enum Table: String, Sendable, CaseIterable {
        case sampleBlocks = "sample_blocks"
        case locationFixes = "location_fixes"
    }

    private let database: Database
    private let ensured = Mutex<Set<String>>([])

    package init(database: Database) {
        self.database = database
    }

    /// Makes sure the months of these instants have partitions in the table.
    package func ensure(_ table: Table, covering instants: some Sequence<Date>) async throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        // The UTC days first: a batch of thousands of samples spans a few days, and the calendar
        // (a month per instant) was 7 % of an import's CPU (perf). A day is hashed when it differs
        // from the last instant's (uploads come in time order): hashing every instant's was 2.5 %
        // of `bench ingest`'s profile.
        var days = Set<Date>()
        var last = -Double.infinity
        for instant in instants {
            let day = (instant.timeIntervalSince1970 / 86_400).rounded(.down)
            if day != last { days.insert(Date(timeIntervalSince1970: day * 86_400)) }
            last = day
        }
        var missing = Set<Date>()
        for day in days {
            let month = calendar.date(from: calendar.dateComponents([.year, .month], from: day))!
            if !ensured.withLock({ $0.contains(Self.key(table, month)) }) { missing.insert(month) }
        }
        for month in missing.sorted() {
            try await database.query(
                """
                SELECT data4help_ensure_month_partitions(\(table.rawValue)::regclass, \(month)::date, \(month)::date)
                """)
            ensured.withLock { _ = $0.insert(Self.key(table, month)) }
        }
    }

    /// Partitions from `monthsBack` months ago to `monthsAhead` months ahead, for every table:
    /// run at start-up and daily, so that ordinary traffic never waits for DDL.
    package func ensureAround(_ now: Date, monthsBack: Int = 1, monthsAhead: Int = 3) async throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let months = (-monthsBack...monthsAhead).compactMap { calendar.date(byAdding: .month, value: $0, to: now) }
        for table in Table.allCases {
            try await ensure(table, covering: months)
        }
    }

    private static func key(_ table: Table, _ month: Date) -> String {
        "\(table.rawValue):\(Int(month.timeIntervalSince1970))"
    }
}
