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

    mutating func reject(_ reason: String, example: String) {
        if let index = rejected.firstIndex(where: { $0.reason == reason }) {
            rejected[index].count += 1
            if rejected[index].examples.count < Self.examplesPerReason { rejected[index].examples.append(example) }
        } else if rejected.count < Self.reasonsKept {
            rejected.append(Rejections(reason: reason, count: 1, examples: [example]))
        } else {
            reject("other reasons", example: example)
        }
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
        return "\(item.type ?? "record") \(value)\(item.unit.map { " " + $0 } ?? "") at \(item.start ?? "no time")"
    }
}
