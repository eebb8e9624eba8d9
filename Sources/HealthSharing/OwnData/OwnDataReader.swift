import AccessManager
import Data4HelpCore
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
    package let source: String?
    /// Where it stands in the listing order, for cursors.
    package let position: SamplePosition
    /// `end` in milliseconds since 1970, exactly as stored.
    package let endMs: Int64?

    /// A stored row as its reader sees it; nil for a type code this build does not know.
    init?(row: SampleRow) {
        guard let type = SampleType(storageCode: row.type) else { return nil }
        let start = Date(timeIntervalSince1970: Double(row.startMs) / 1000)
        self.type = type
        self.start = start
        end = row.durationMs.map { start.addingTimeInterval(Double($0) / 1000) }
        // Values are stored as float4: show the shortest decimal that is that float (99.088, not 99.08799743…).
        value = Double(row.value.description) ?? Double(row.value)
        source = row.source
        position = SamplePosition(startMs: row.startMs, type: row.type, key: row.key)
        endMs = row.durationMs.flatMap { duration in
            let (end, overflow) = row.startMs.addingReportingOverflow(Int64(duration))
            return overflow ? nil : end
        }
    }

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

    init(row: LocationRow) {
        time = Date(timeIntervalSince1970: Double(row.timeMs) / 1000)
        latitude = row.latitude
        longitude = row.longitude
        accuracy = row.accuracy.map(Double.init)
        altitude = row.altitude.map(Double.init)
        position = (row.timeMs, row.key)
    }

    /// A Track4Run position as a fix of the runner's route (no altitude; never a cursor).
    init(runPosition: RunPositionRecord) {
        time = Date(timeIntervalSince1970: Double(runPosition.timeMs) / 1000)
        latitude = runPosition.latitude
        longitude = runPosition.longitude
        accuracy = runPosition.accuracy.map(Double.init)
        altitude = nil
        position = (runPosition.timeMs, 0)
    }

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
    let summaries: SummaryQueries

    package init(database: Database) {
        self.reader = HealthDataReader(database: database)
        self.summaries = SummaryQueries(database: database)
    }

    /// The caller's samples of the given types (all when empty) in `[from, to)`.
    package func samples(
        of individual: IndividualID, types: [SampleType], from: Date?, to: Date?, order: ListingOrder, limit: Int, after: SamplePosition?
    ) async throws -> ListingPage<StoredSample, SamplePosition> {
        try await samples(ofIndividual: individual.rowId, types: types, from: from, to: to, order: order, limit: limit, after: after)
    }

    /// An individual's samples, for a caller whose right to them is already established.
    func samples(
        ofIndividual individualId: Int64, types: [SampleType], from: Date?, to: Date?, order: ListingOrder, limit: Int, after: SamplePosition?
    ) async throws -> ListingPage<StoredSample, SamplePosition> {
        // Nothing is stored later than its upload's clock allowed (`IngestRules.futureTolerance`):
        // bounding the window there lets the listing start at this month's partition, not at the
        // empty ones made ahead. A day's margin covers instances whose clocks disagree.
        let newest = Date().addingTimeInterval(86_400)
        let rows = try await reader.samples(
            individualId: individualId, types: (types.isEmpty ? SampleType.allCases : types).map(\.storageCode),
            fromMs: from.map(\.epochMilliseconds), toMs: min(to ?? newest, newest).epochMilliseconds,
            descending: order == .descending, limit: limit + 1, after: after
        )
        let items = rows.prefix(limit).compactMap(StoredSample.init(row:))
        return ListingPage(items: items, next: rows.count > limit ? items.last?.position : nil)
    }

    /// The caller's location fixes in `[from, to)`.
    package func locations(
        of individual: IndividualID, from: Date?, to: Date?, order: ListingOrder, limit: Int, after: (timeMs: Int64, key: Int64)?
    ) async throws -> ListingPage<StoredLocationFix, (timeMs: Int64, key: Int64)> {
        try await locations(ofIndividual: individual.rowId, from: from, to: to, order: order, limit: limit, after: after)
    }

    /// An individual's location fixes, for a caller whose right to them is already established.
    func locations(
        ofIndividual individualId: Int64, from: Date?, to: Date?, order: ListingOrder, limit: Int, after: (timeMs: Int64, key: Int64)?
    ) async throws -> ListingPage<StoredLocationFix, (timeMs: Int64, key: Int64)> {
        let rows = try await reader.locations(
            individualId: individualId, fromMs: from.map(\.epochMilliseconds), toMs: to.map(\.epochMilliseconds),
            descending: order == .descending, limit: limit + 1, after: after
        )
        let items = rows.prefix(limit).map(StoredLocationFix.init(row:))
        return ListingPage(items: Array(items), next: rows.count > limit ? items.last?.position : nil)
    }
}

/// Statistics of one summary bucket, values in the type's canonical unit.
package struct SummaryBucketStats: Sendable, Equatable {
    package let start: Date
    package let count: Int
    package let minimum: Double
    package let maximum: Double
    package let mean: Double
    /// The total, for interval types (steps, distance, energy), where a sum means something.
    package let sum: Double?
}

/// An individual's summary of one type over a window.
package struct OwnDataSummary: Sendable {
    package let type: SampleType
    package let bucket: SummaryBucket
    package let timeZone: String
    package let buckets: [SummaryBucketStats]
}

/// Why a summary cannot be made.
package enum SummaryError: Error, Equatable {
    /// Summaries are statistics of numbers; sleep stages are not.
    case notAQuantity(SampleType)
    /// More buckets than one answer holds.
    case windowTooLong(maximumDays: Int)
}

extension OwnDataReader {
    /// The longest window of each bucket width, in days.
    package static func maximumWindowDays(_ bucket: SummaryBucket) -> Int {
        switch bucket {
        case .hour: 31
        case .day: 3 * 366
        case .week: 10 * 366
        }
    }

    /// Count, minimum, maximum and mean (and the sum for interval types) per bucket of the
    /// individual's time zone, for buckets starting in `[from, to)`; empty buckets are left out.
    package func summary(
        of individual: IndividualID, type: SampleType, bucket: SummaryBucket, from: Date, to: Date
    ) async throws -> OwnDataSummary {
        let individualId = individual.rowId
        guard type.hasDailyRollup else { throw SummaryError.notAQuantity(type) }
        let maximumDays = Self.maximumWindowDays(bucket)
        guard to.timeIntervalSince(from) <= Double(maximumDays) * 86_400 else { throw SummaryError.windowTooLong(maximumDays: maximumDays) }
        let (timeZone, rows) = try await summaries.summary(
            individualId: individualId, type: type.storageCode, bucket: bucket,
            fromMs: from.epochMilliseconds, toMs: to.epochMilliseconds
        )
        let buckets = rows.map { row in
            SummaryBucketStats(
                start: Date(timeIntervalSince1970: Double(row.bucketStartMs) / 1000),
                count: row.count,
                minimum: Double(row.min.description) ?? Double(row.min),
                maximum: Double(row.max.description) ?? Double(row.max),
                mean: row.sum / Double(row.count),
                sum: type.isInterval ? row.sum : nil
            )
        }
        return OwnDataSummary(type: type, bucket: bucket, timeZone: timeZone, buckets: buckets)
    }
}

extension OwnDataReader {
    /// Walks all of the caller's samples, oldest first, one page at a time: memory stays bounded
    /// by the page size whatever the size of the history (for exports).
    package func forEachSamplePage(
        of individual: IndividualID, pageSize: Int = 5_000, _ body: ([StoredSample]) async throws -> Void
    ) async throws {
        var after: SamplePosition?
        repeat {
            let page = try await samples(of: individual, types: [], from: nil, to: nil, order: .ascending, limit: pageSize, after: after)
            if !page.items.isEmpty { try await body(page.items) }
            after = page.next
        } while after != nil
    }

    /// Walks all of the caller's location fixes, oldest first, one page at a time.
    package func forEachLocationPage(
        of individual: IndividualID, pageSize: Int = 5_000, _ body: ([StoredLocationFix]) async throws -> Void
    ) async throws {
        var after: (timeMs: Int64, key: Int64)?
        repeat {
            let page = try await locations(of: individual, from: nil, to: nil, order: .ascending, limit: pageSize, after: after)
            if !page.items.isEmpty { try await body(page.items) }
            after = page.next
        } while after != nil
    }
}
