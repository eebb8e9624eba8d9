import Data4HelpCore
import Foundation

/// One series of an upload as the client sent it (`series` in `POST /api/users/data`): readings
/// of one type at a fixed interval, as a watch or a CGM records them — `start` is the first
/// value's time, each next value `intervalMs` later, `null` an empty slot. Modelled on FHIR's
/// `SampledData` (origin, period, data): a reading costs the few bytes of its number instead of
/// an object of about 110 bytes with its own type and time.
package struct RawSeries: Sendable, Equatable {
    package var type: String?
    package var unit: String?
    package var start: RawInstant?
    package var intervalMs: Double?
    package var values: [Double?]?
    package var source: String?
    /// Set when a field had the wrong JSON type: the whole series is refused.
    package var fieldError: String?

    package init() {}

    /// Positions the series takes in an upload's numbering: one a value, and one for a series
    /// without values (which is refused there).
    package var positions: Int { max(values?.count ?? 0, 1) }
}

/// An upload as sent: its items, then its series. A series' values are numbered after the
/// items, in order (`index` of a rejection), and named by a JSON pointer (`/series/0/values/17`).
package struct RawUpload: Sendable, Equatable {
    package var items: [RawIngestItem]
    package var series: [RawSeries]
    /// Whether the body had `series` (an empty one included): which field an empty upload's
    /// problem names.
    package var hasSeries: Bool

    package init(items: [RawIngestItem] = [], series: [RawSeries] = [], hasSeries: Bool? = nil) {
        self.items = items
        self.series = series
        self.hasSeries = hasSeries ?? !series.isEmpty
    }

    /// Items and series values (a series without values counts one), the figure the upload's
    /// size limit counts (overflow-safe: the counts are of arrays held in memory).
    package var readings: Int { series.reduce(items.count) { $0 + $1.positions } }
}

extension IngestRules {
    /// The longest interval of a series, as a sample may cover at most a day.
    package static let longestSeriesIntervalMs = 86_400_000

    /// The valid values of `series` as samples, each with its position among the series' values
    /// (`slot`), and the refusals: of the whole series (`slot` nil) or of one value.
    package func validate(_ series: RawSeries, now: Date) -> (samples: [(slot: Int, sample: NewSample)], refused: [(slot: Int?, reason: String)]) {
        do {
            let header = try check(series, now: now)
            var samples: [(slot: Int, sample: NewSample)] = []
            var refused: [(slot: Int?, reason: String)] = []
            samples.reserveCapacity(header.values.count)
            for (slot, value) in header.values.enumerated() {
                guard let value else { continue }
                do {
                    samples.append((slot, try header.sample(slot, value: value, rules: self, now: now)))
                } catch {
                    refused.append((slot, error.reason))
                }
            }
            return (samples, refused)
        } catch {
            return ([], [(nil, error.reason)])
        }
    }

    /// What a series' values share, checked once: its type, unit, first time, interval and source.
    private struct SeriesHeader {
        let type: SampleType
        let scale: QuantityScale
        let startMilliseconds: Int64
        let intervalMilliseconds: Int64
        let values: [Double?]
        let source: String?

        func sample(_ slot: Int, value: Double, rules: IngestRules, now: Date) throws(SampleRejection) -> NewSample {
            let canonical = try scale.canonical(value)
            // Slots of at most a day after a start between 2000 and now stay far inside Int64 for
            // any array that fits in memory; the arithmetic reports overflow all the same.
            let offset = Int64(truncatingIfNeeded: slot).multipliedReportingOverflow(by: intervalMilliseconds)
            let sum = startMilliseconds.addingReportingOverflow(offset.partialValue)
            guard !offset.overflow, !sum.overflow else { throw SampleRejection("the value's time is out of range") }
            let milliseconds = sum.partialValue
            let start = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            guard start.timeIntervalSince(now) <= rules.futureTolerance else {
                throw SampleRejection("the value's time (start + its position × intervalMs) is in the future")
            }
            let end = type.isInterval ? Date(timeIntervalSince1970: Double(milliseconds + intervalMilliseconds) / 1000) : nil
            let stored = Float(canonical)
            return NewSample(
                type: type, start: start, end: end, value: stored, key: DedupeKey.forSample(startMilliseconds: milliseconds, value: stored),
                source: source)
        }
    }

    private func check(_ series: RawSeries, now: Date) throws(SampleRejection) -> SeriesHeader {
        if let fieldError = series.fieldError { throw SampleRejection(fieldError) }
        guard let type = series.type.flatMap(SampleType.init(rawValue:)) else {
            throw SampleRejection("type must be one of \(SampleType.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard !type.isCategory else { throw SampleRejection("\(type.rawValue) is sent as items: its values are words, not numbers") }
        let scale = try type.scale(unit: series.unit)
        let start = try instant(series.start, field: "start", now: now)
        guard let interval = series.intervalMs else { throw SampleRejection("intervalMs is required") }
        guard let milliseconds = Int64(exactly: interval), (1...Int64(Self.longestSeriesIntervalMs)).contains(milliseconds) else {
            throw SampleRejection("intervalMs must be a whole number of milliseconds from 1 to \(Self.longestSeriesIntervalMs) (a day)")
        }
        guard let values = series.values, !values.isEmpty else { throw SampleRejection("values must hold at least one value") }
        try checkSource(series.source)
        return SeriesHeader(
            type: type, scale: scale, startMilliseconds: start.epochMilliseconds, intervalMilliseconds: milliseconds, values: values,
            source: series.source)
    }
}
