import AccessManager
import DatabaseLink
import Foundation

/// Oldest first or newest first.
package enum ListingOrder: String, Sendable {
    case ascending = "asc"
    case descending = "desc"
}

/// A stored health sample as its owner sees it, value in the canonical unit.
package struct StoredSample: Sendable, Equatable {
    package let type: SampleType
    package let start: Date
    package let end: Date?
    package let value: Double
    /// Where it stands in the listing order, for cursors.
    package let position: SamplePosition

    /// The sleep stage of a `sleep` sample.
    package var sleepStage: SleepStage? {
        guard type == .sleep else { return nil }
        return SleepStage.allCases.first { $0.storedValue == value }
    }
}

/// A stored location fix as its owner sees it.
package struct StoredLocationFix: Sendable, Equatable {
    package let time: Date
    package let latitude: Double
    package let longitude: Double
    package let accuracy: Double?
    package let altitude: Double?
    package let position: (timeMs: Int64, key: Int64)

    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.time == rhs.time && lhs.latitude == rhs.latitude && lhs.longitude == rhs.longitude
            && lhs.accuracy == rhs.accuracy && lhs.altitude == rhs.altitude && lhs.position == rhs.position
    }
}

/// One page of a listing and where the next one starts (nil on the last page).
package struct ListingPage<Item: Sendable, Position: Sendable>: Sendable {
    package let items: [Item]
    package let next: Position?
}

/// An individual's view of their own history (goals G2/G3 of the design document).
package struct OwnDataReader: Sendable {
    let reader: HealthDataReader

    package init(database: Database) {
        self.reader = HealthDataReader(database: database)
    }

    /// The caller's samples of the given types (all when empty) in `[from, to)`.
    package func samples(
        of principal: Principal, types: [SampleType], from: Date?, to: Date?, order: ListingOrder, limit: Int, after: SamplePosition?
    ) async throws -> ListingPage<StoredSample, SamplePosition> {
        let individualId = try Self.individual(principal)
        let rows = try await reader.samples(
            individualId: individualId, types: (types.isEmpty ? SampleType.allCases : types).map(\.storageCode),
            fromMs: from.map(Self.milliseconds), toMs: to.map(Self.milliseconds),
            descending: order == .descending, limit: limit + 1, after: after
        )
        let items: [StoredSample] = rows.prefix(limit).compactMap { row in
            guard let type = SampleType(storageCode: row.type) else { return nil }
            let start = Date(timeIntervalSince1970: Double(row.startMs) / 1000)
            return StoredSample(
                type: type, start: start,
                end: row.durationMs.map { start.addingTimeInterval(Double($0) / 1000) },
                // Values are stored as float4: show the shortest decimal that is that float (99.088, not 99.08799743…).
                value: Double(row.value.description) ?? Double(row.value),
                position: SamplePosition(startMs: row.startMs, type: row.type, key: row.key)
            )
        }
        return ListingPage(items: items, next: rows.count > limit ? items.last?.position : nil)
    }

    /// The caller's location fixes in `[from, to)`.
    package func locations(
        of principal: Principal, from: Date?, to: Date?, order: ListingOrder, limit: Int, after: (timeMs: Int64, key: Int64)?
    ) async throws -> ListingPage<StoredLocationFix, (timeMs: Int64, key: Int64)> {
        let individualId = try Self.individual(principal)
        let rows = try await reader.locations(
            individualId: individualId, fromMs: from.map(Self.milliseconds), toMs: to.map(Self.milliseconds),
            descending: order == .descending, limit: limit + 1, after: after
        )
        let items = rows.prefix(limit).map { row in
            StoredLocationFix(
                time: Date(timeIntervalSince1970: Double(row.timeMs) / 1000), latitude: row.latitude, longitude: row.longitude,
                accuracy: row.accuracy.map(Double.init), altitude: row.altitude.map(Double.init), position: (row.timeMs, row.key)
            )
        }
        return ListingPage(items: Array(items), next: rows.count > limit ? items.last?.position : nil)
    }

    private static func individual(_ principal: Principal) throws -> Int64 {
        guard case .individual(let id) = principal.account else { throw AccountError.notFound }
        return id
    }

    private static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }
}
