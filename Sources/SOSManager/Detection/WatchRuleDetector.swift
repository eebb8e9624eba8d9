import Data4HelpCore
import DatabaseLink
import Foundation
import HealthSharing
import Logging
import Metrics

/// Evaluates the individual's watch rules inside every ingest transaction that stored new
/// readings of a watched type: an alert commits together with the reading that completed its
/// episode, or not at all. Ingests of one individual are serialised on every instance, so two
/// instances never raise the same episode twice and the throttle holds across them. Individuals
/// without rules cost one indexed lookup per upload.
package struct WatchRuleDetector: IngestTransactionCheck {
    let logger: Logger

    package init(logger: Logger) {
        self.logger = logger
    }

    package func samplesStored(_ readings: [StoredReading], in transaction: IngestTransaction) async throws {
        let typeCodes = Array(Set(readings.map(\.typeCode))).sorted()
        guard !typeCodes.isEmpty else { return }
        let (rules, zoneName) = try await WatchRuleDetection.rules(typeCodes: typeCodes, in: transaction)
        guard !rules.isEmpty else { return }
        let timeZone = TimeZone(identifier: zoneName) ?? .gmt
        let receivedAtMs = transaction.receivedAt.epochMilliseconds
        for rule in rules {
            let settings = rule.settings
            let new = readings.filter { $0.typeCode == settings.typeCode }
            guard let first = new.map(\.timeMs).min(), let last = new.map(\.timeMs).max(), let type = SampleType(storageCode: settings.typeCode)
            else { continue }
            // Nothing this upload stored can end a recent episode: history, not worth a read.
            guard last + WatchEpisodes.maximumReadingAge >= receivedAtMs else { continue }
            let finder = WatchEpisodes(
                comparison: settings.comparison, persistence: settings.persistence, activeHours: settings.activeHours, timeZone: timeZone)
            let context = finder.context
            let slice = try await WatchRuleDetection.readings(
                typeCode: settings.typeCode, fromMs: first - context.milliseconds, toMs: last + context.milliseconds, extra: context.readings,
                in: transaction)
            let condition = WatchRuleWording.condition(of: settings, type: type)
            for episode in finder.episodes(in: slice, new: Set(new.map(\.identity)), receivedAtMs: receivedAtMs) {
                let outcome = try await WatchRuleDetection.record(episode: episode.readings, of: rule, condition: condition, in: transaction) {
                    try AlertRaisedNotice(
                        $0, rule: rule, typeName: type.rawValue, condition: condition, latest: episode.readings.last,
                        episodeStartMs: episode.firstMs
                    ).message
                }
                if case .raised(let id) = outcome {
                    Counter(label: "watch_alerts_raised_total", dimensions: [("severity", settings.severity.rawValue)]).increment()
                    logger.info("watch alert raised", metadata: ["individual.id": "\(transaction.individualId)", "alert.id": "\(id)"])
                }
            }
        }
    }
}

/// A rule's condition in words, for alerts and their messages ("heart rate below 40 bpm for 20
/// minutes").
package enum WatchRuleWording {
    package static func condition(of settings: WatchRuleSettings, type: SampleType) -> String {
        let unit: String =
            switch type.definition {
            case .quantity(let unit, _, _): unit == "%" ? "%" : " " + unit
            case .category: ""
            }
        func number(_ value: Float) -> String { Double(value.description).map { $0.formatted(.number.grouping(.never)) } ?? value.description }
        let bounds: String =
            switch settings.comparison {
            case .below(let bound): "below \(number(bound))\(unit)"
            case .above(let bound): "above \(number(bound))\(unit)"
            case .outside(let low, let high): "outside \(number(low))–\(number(high))\(unit)"
            }
        let subject = type.spokenName
        switch settings.persistence {
        case .consecutive(1): return "\(subject) \(bounds)"
        case .consecutive(let count): return "\(subject) \(bounds) in \(count) readings in a row"
        case .sustained(let duration): return "\(subject) \(bounds) for \(minutes(duration))"
        case .aggregate(let statistic, let window): return "\(statistic.rawValue) \(subject) over \(minutes(window)) \(bounds)"
        }
    }

    static func minutes(_ milliseconds: Int64) -> String {
        let minutes = milliseconds / 60_000
        if minutes % 60 == 0 { return minutes == 60 ? "1 hour" : "\(minutes / 60) hours" }
        return minutes == 1 ? "1 minute" : "\(minutes) minutes"
    }
}

extension SampleType {
    /// The type's name in a sentence ("heart rate", "blood glucose").
    package var spokenName: String {
        rawValue.reduce(into: "") { words, character in
            if character.isUppercase { words += " " + character.lowercased() } else { words.append(character) }
        }
    }
}
