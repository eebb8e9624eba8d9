import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation

/// What diabetes tools report over a window of blood-glucose readings (the international
/// consensus on CGM metrics, Battelino et al., Diabetes Care 2019): the share of readings below,
/// in and above the individual's range, and below 54 / above 250 mg/dL; the mean, its standard
/// deviation and coefficient of variation; the glucose management indicator; hypo episodes.
package struct GlucoseReport: Sendable, Equatable {
    /// Where the range's bounds came from.
    package enum BoundsSource: String, Sendable {
        /// The request named them.
        case request
        /// The individual's glucose watch rule (`outside` low–high).
        case rule
        /// 70–180 mg/dL, the consensus target range.
        case standard
    }

    package var low: Double
    package var high: Double
    package var boundsSource: BoundsSource
    package var readings: Int
    /// mg/dL; nil without readings (as every figure below).
    package var mean: Double?
    package var standardDeviation: Double?
    /// Standard deviation over mean, %; at most 36 % is called stable.
    package var coefficientOfVariation: Double?
    /// GMI % = 3.31 + 0.02392 × mean mg/dL (Bergenstal et al., 2018).
    package var glucoseManagementIndicator: Double?
    /// Shares of readings, %.
    package var veryLow: Double?
    package var belowRange: Double?
    package var inRange: Double?
    package var aboveRange: Double?
    package var veryHigh: Double?
    /// Runs of consecutive readings below `low`: a reading at or above it, or three hours without
    /// a reading, ends one.
    package var hypoEpisodes: Int
    package var first: Date?
    package var last: Date?

    /// The consensus's level-2 bounds, mg/dL.
    package static let veryLowBound = 54.0
    package static let veryHighBound = 250.0
    /// A gap that ends a hypo episode (as a watch rule's consecutive run).
    package static let episodeGapMs: Int64 = 3 * 3_600_000

    /// The figures of `readings` (oldest first, mg/dL) for the range `low`–`high` (in range:
    /// `low ≤ value ≤ high`).
    package init(readings: [(timeMs: Int64, value: Float)], low: Double, high: Double, boundsSource: BoundsSource) {
        self.low = low
        self.high = high
        self.boundsSource = boundsSource
        self.readings = readings.count
        hypoEpisodes = 0
        guard !readings.isEmpty else { return }
        let values = readings.map { Double($0.value) }
        let count = Double(values.count)
        let mean = values.reduce(0, +) / count
        let variance = values.count > 1 ? values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / (count - 1) : 0
        self.mean = mean
        standardDeviation = variance.squareRoot()
        coefficientOfVariation = mean > 0 ? variance.squareRoot() / mean * 100 : nil
        glucoseManagementIndicator = 3.31 + 0.02392 * mean
        func share(_ test: (Double) -> Bool) -> Double { Double(values.filter(test).count) / count * 100 }
        veryLow = share { $0 < Self.veryLowBound }
        belowRange = share { $0 < low }
        inRange = share { $0 >= low && $0 <= high }
        aboveRange = share { $0 > high }
        veryHigh = share { $0 > Self.veryHighBound }
        var episodes = 0
        var previousLowAt: Int64?
        for reading in readings {
            if Double(reading.value) < low {
                if previousLowAt.map({ reading.timeMs - $0 > Self.episodeGapMs }) ?? true { episodes += 1 }
                previousLowAt = reading.timeMs
            } else {
                previousLowAt = nil
            }
        }
        hypoEpisodes = episodes
        first = readings.first.map { Date(timeIntervalSince1970: Double($0.timeMs) / 1000) }
        last = readings.last.map { Date(timeIntervalSince1970: Double($0.timeMs) / 1000) }
    }
}

extension OwnDataReader {
    /// The longest window of a glucose report, in days.
    package static let maximumGlucoseDays = 90

    /// The glucose report of the caller's readings in `[from, to)`, for `range` if given, else
    /// the range of their glucose watch rule, else 70–180 mg/dL. Counted as summaries count:
    /// one source per minute.
    package func glucoseReport(of individual: IndividualID, from: Date, to: Date, range: (low: Double, high: Double)?) async throws -> GlucoseReport {
        try await glucose(of: individual, from: from, to: to, range: range).report
    }

    /// The glucose report of a window and the readings it counted (one source per minute, oldest
    /// first, mg/dL), for a chart.
    package func glucose(
        of individual: IndividualID, from: Date, to: Date, range: (low: Double, high: Double)?
    ) async throws -> (report: GlucoseReport, readings: [(timeMs: Int64, value: Float)]) {
        guard to.timeIntervalSince(from) <= Double(Self.maximumGlucoseDays) * 86_400 else {
            throw SummaryError.windowTooLong(maximumDays: Self.maximumGlucoseDays)
        }
        let glucose = SampleType.bloodGlucose.storageCode
        let bounds: (low: Double, high: Double, source: GlucoseReport.BoundsSource)
        if let range {
            bounds = (range.low, range.high, .request)
        } else if let rule = try await summaries.glucoseRange(individualId: individual.rowId, glucoseType: glucose) {
            bounds = (Double(rule.low.description) ?? Double(rule.low), Double(rule.high.description) ?? Double(rule.high), .rule)
        } else {
            bounds = (70, 180, .standard)
        }
        let readings = try await summaries.countedReadings(
            individualId: individual.rowId, type: glucose, fromMs: from.epochMilliseconds, toMs: to.epochMilliseconds)
        return (GlucoseReport(readings: readings, low: bounds.low, high: bounds.high, boundsSource: bounds.source), readings)
    }
}
