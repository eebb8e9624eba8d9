import Data4HelpCore

/// What an import has stored so far, as its owner reads it: per type how many records were
/// stored and how many were there already, records refused by reason with a few examples, types
/// skipped as not ours. Committed with the data it counts, so it never counts a batch twice or
/// one that was rolled back.
package struct ImportFigures: Codable, Sendable, Equatable {
    package struct TypeCounts: Codable, Sendable, Equatable {
        package var accepted = 0
        package var duplicates = 0
    }

    package struct Rejections: Codable, Sendable, Equatable {
        package var reason: String
        package var count: Int
        /// Up to `ImportFigures.examplesPerReason` records, as "heartRate 300 at 2026-11-19T08:30:00+01:00".
        package var examples: [String]
    }

    /// Reasons kept apart; the rest are counted under "other reasons".
    static let reasonsKept = 20
    static let examplesPerReason = 3

    /// By our type name (`heartRate`; `location` for location fixes, `workout` for workouts).
    package var types: [String: TypeCounts] = [:]
    package var rejected: [Rejections] = []
    /// By the file's own type name (`HKQuantityTypeIdentifierFlightsClimbed`).
    package var skipped: [String: Int] = [:]
    /// Workouts read (those stored are counted under `types["workout"]`).
    package var workouts = 0
    /// The times of what was stored, by the type names of `types`: what the import's end
    /// announces to subscribed grants. Absent in the figures of imports before it was kept.
    package var spans: [String: DataSpan]?

    package init() {}

    /// Where reasons beyond the first `reasonsKept` are counted.
    static let otherReasons = "other reasons"

    mutating func reject(_ reason: String, example: String) { reject(reason, count: 1, examples: [example]) }

    /// Counts `count` records refused for `reason`, keeping up to `examplesPerReason` examples.
    mutating func reject(_ reason: String, count: Int, examples: [String]) {
        if let index = rejected.firstIndex(where: { $0.reason == reason }) {
            rejected[index].count += count
            rejected[index].examples += examples.prefix(max(0, Self.examplesPerReason - rejected[index].examples.count))
        } else if rejected.count < Self.reasonsKept || reason == Self.otherReasons {
            rejected.append(Rejections(reason: reason, count: count, examples: Array(examples.prefix(Self.examplesPerReason))))
        } else {
            reject(Self.otherReasons, count: count, examples: examples)
        }
    }

    /// Adds figures counted apart (a later batch's), keeping the limits on reasons and examples.
    mutating func merge(_ other: ImportFigures) {
        for (type, counts) in other.types {
            types[type, default: TypeCounts()].accepted += counts.accepted
            types[type, default: TypeCounts()].duplicates += counts.duplicates
        }
        for rejection in other.rejected { reject(rejection.reason, count: rejection.count, examples: rejection.examples) }
        for (type, count) in other.skipped { skipped[type, default: 0] += count }
        workouts += other.workouts
        for (type, span) in other.spans ?? [:] { addSpan(span, to: type) }
    }

    /// Adds what a stored batch counted.
    mutating func add(_ batch: HistoryBatch, items: [RawIngestItem]) {
        for (type, count) in batch.stored { types[type.rawValue, default: TypeCounts()].accepted += count }
        for (type, count) in batch.duplicates { types[type.rawValue, default: TypeCounts()].duplicates += count }
        if batch.locations.stored + batch.locations.duplicates > 0 {
            types[DataKind.locationName, default: TypeCounts()].accepted += batch.locations.stored
            types[DataKind.locationName, default: TypeCounts()].duplicates += batch.locations.duplicates
        }
        for (type, span) in batch.spans { addSpan(span, to: type.rawValue) }
        if let span = batch.locationSpan { addSpan(span, to: DataKind.locationName) }
        for rejection in batch.rejected where items.indices.contains(rejection.index) {
            reject(rejection.reason, example: Self.example(items[rejection.index]))
        }
    }

    mutating func addSpan(_ span: DataSpan, to type: String) {
        var all = spans ?? [:]
        all[type] = span.union(all[type])
        spans = all
    }

    static func example(_ item: RawIngestItem) -> String {
        let value: String =
            switch item.value {
            case .number(let number): number.formattedValue
            case .word(let word): word
            case nil: "no value"
            }
        let time = item.start.map { $0.date.map(WireFormat.timestamp) ?? "an unreadable time" } ?? "no time"
        return "\(item.type?.name ?? "record") \(value)\(item.unit.map { " " + $0 } ?? "") at \(time)"
    }
}
