import Data4HelpCore
import DatabaseLink
import Foundation
import HealthSharing
import Logging
import Metrics

/// The SOS Manager's Anomaly Detection module, run inside every ingest transaction: the
/// individual's watch rules (alerts) and AutomatedSOS, their emergency rule (`AbnormalRunRule`:
/// an incident with an ambulance), all found by `WatchEpisodes`. What it finds commits together
/// with the reading that completed it, or not at all; ingests of one individual are serialised on every instance, so two instances
/// never open the same incident or raise the same episode twice, and throttles hold across them.
///
/// Cost per upload: one prepared lookup (enrolment, rules, time zone) for everyone; then, per
/// uploaded type with a rule that one of the new readings meets (or an aggregate rule), one
/// prepared read of the stored readings around the new ones — wide enough for every such rule on
/// that type at once — and each evaluator takes its own window of it. A normal reading costs no read.
package struct AnomalyDetector: IngestTransactionCheck {
    let logger: Logger

    package init(logger: Logger) {
        self.logger = logger
    }

    package func samplesStored(_ readings: [StoredReading], in transaction: IngestTransaction) async throws {
        let typeCodes = Array(Set(readings.map(\.typeCode))).sorted()
        guard !typeCodes.isEmpty else { return }
        let context = try await AnomalyDetectionQueries.context(typeCodes: typeCodes, in: transaction)
        guard !context.isEmpty else { return }
        let timeZone = TimeZone(identifier: context.timeZone) ?? .gmt
        let receivedAtMs = transaction.receivedAt.epochMilliseconds
        for typeCode in typeCodes {
            guard let type = SampleType(storageCode: typeCode) else { continue }
            let new = readings.filter { $0.typeCode == typeCode }
            guard let first = new.map(\.timeMs).min(), let last = new.map(\.timeMs).max() else { continue }
            // AutomatedSOS is this type's emergency rule, when the individual is enrolled and it has a threshold.
            let sos = context.sos.flatMap { thresholds in thresholds.rule(for: type).map { (thresholds, WatchEpisodes($0)) } }
                .flatMap { $0.1.mayFindEpisodes(with: new) ? $0 : nil }
            // A rule cannot end a recent episode with what this upload stored: history, not worth a read.
            let rules = context.rules.filter { $0.settings.typeCode == typeCode && last + WatchEpisodes.maximumReadingAge >= receivedAtMs }
                .map { ($0, WatchEpisodes($0.settings, timeZone: timeZone)) }
                .filter { $0.1.mayFindEpisodes(with: new) }
            let windows = (rules.map(\.1) + (sos.map { [$0.1] } ?? [])).map { finder in
                ReadingWindow(fromMs: first - finder.context.milliseconds, toMs: last + finder.context.milliseconds, extra: finder.context.readings)
            }
            guard let wide = ReadingWindow(covering: windows) else { continue }
            let stored = try await AnomalyDetectionQueries.readings(
                typeCode: typeCode, fromMs: wide.fromMs, toMs: wide.toMs, extra: wide.extra, in: transaction)
            let fresh = Set(new.map(\.identity))
            if let thresholds = sos?.0, let window = windows.last {  // the emergency rule's window comes last
                try await openIncidents(
                    AbnormalRunRule(thresholds.with(readings: window.cut(stored))), type: type, cancelWindowSeconds: thresholds.cancelWindowSeconds,
                    new: fresh, in: transaction)
            }
            for ((rule, finder), window) in zip(rules, windows) {
                try await raiseAlerts(
                    rule, finder.episodes(in: window.cut(stored), new: fresh, receivedAtMs: receivedAtMs), type: type, in: transaction)
            }
        }
    }

    private func openIncidents(
        _ rule: AbnormalRunRule, type: SampleType, cancelWindowSeconds: Int, new: Set<ReadingIdentity>, in transaction: IngestTransaction
    ) async throws {
        for run in rule.emergencies(type: type, new: new, receivedAt: transaction.receivedAt) {
            if let incident = try await SOSDetectionQueries.open(
                run, cancelWindowSeconds: cancelWindowSeconds, locationStaleAfter: AbnormalRunRule.locationStaleAfter, in: transaction,
                notice: { try SOSDetectedNotice($0).message }
            ) {
                Counter(label: "sos_incidents_detected_total").increment()
                logger.notice(
                    "sos incident detected", metadata: ["individual.id": "\(transaction.individualId)", "incident.id": "\(incident.publicId)"])
            }
        }
    }

    private func raiseAlerts(_ rule: WatchRule, _ episodes: [WatchEpisode], type: SampleType, in transaction: IngestTransaction) async throws {
        guard !episodes.isEmpty else { return }
        let settings = rule.settings
        let condition = WatchRuleWording.condition(of: settings, type: type)
        for episode in episodes {
            let notice = { (alert: RaisedAlert) in
                AlertRaisedNotice(
                    alert, rule: rule, typeName: type.rawValue, condition: condition, latest: episode.readings.last, episodeStartMs: episode.firstMs)
            }
            let outcome = try await WatchRuleDetection.record(episode: episode.readings, of: rule, condition: condition, in: transaction) {
                try notice($0).message
            }
            if case .raised(let alert) = outcome {
                try await WatchRuleDetection.tellCarers(of: rule, typeName: type.rawValue, in: transaction) {
                    try CareAlertNotice($0, alert: notice(alert)).message
                }
                Counter(label: "watch_alerts_raised_total", dimensions: [("severity", settings.severity.rawValue)]).increment()
                logger.info("watch alert raised", metadata: ["individual.id": "\(transaction.individualId)", "alert.id": "\(alert.publicId)"])
            }
        }
    }
}

/// Which stored readings an evaluator needs around an upload's new ones: all from `fromMs` to
/// `toMs`, and the `extra` nearest on each side within a day — what
/// `AnomalyDetectionQueries.readings` answers for the same arguments. One read covering every
/// evaluator's window serves them all: `cut` takes each one's window out of it.
package struct ReadingWindow: Sendable, Equatable {
    package let fromMs: Int64
    package let toMs: Int64
    package let extra: Int

    package init(fromMs: Int64, toMs: Int64, extra: Int) {
        self.fromMs = fromMs
        self.toMs = toMs
        self.extra = max(extra, 0)
    }

    /// The smallest window that holds each of `windows`; nil when there are none.
    package init?(covering windows: [ReadingWindow]) {
        guard let fromMs = windows.map(\.fromMs).min(), let toMs = windows.map(\.toMs).max(), let extra = windows.map(\.extra).max()
        else { return nil }
        self.init(fromMs: fromMs, toMs: toMs, extra: extra)
    }

    static let dayMs: Int64 = 86_400_000

    /// This window out of `readings` (sorted by time, then key) read for a window covering it.
    /// The day bounds are the query's: the blocks before start at most a day before `fromMs`'s
    /// minute, the blocks after at most a day after `toMs`'s.
    package func cut(_ readings: [StoredReading]) -> [StoredReading] {
        let earliest = Self.minute(fromMs) - Self.dayMs
        let latest = Self.minute(toMs) + Self.dayMs + 60_000  // exclusive: the whole last minute
        let start = readings.firstIndex { $0.timeMs >= fromMs } ?? readings.endIndex
        let end = readings.firstIndex { $0.timeMs > toMs } ?? readings.endIndex
        var lower = start
        while lower > readings.startIndex, start - lower < extra, readings[lower - 1].timeMs >= earliest { lower -= 1 }
        var upper = end
        while upper < readings.endIndex, upper - end < extra, readings[upper].timeMs < latest { upper += 1 }
        return Array(readings[lower..<upper])
    }

    private static func minute(_ timeMs: Int64) -> Int64 {
        let (quotient, remainder) = timeMs.quotientAndRemainder(dividingBy: 60_000)
        return (remainder < 0 ? quotient - 1 : quotient) * 60_000
    }
}
