import Data4HelpCore
import DatabaseLink
import Foundation

/// A stretch of readings over which a rule's condition held: what one alert is about.
package struct WatchEpisode: Sendable, Equatable {
    /// Oldest first; for an aggregate, the readings of the windows that met it.
    package let readings: [StoredReading]

    package var firstMs: Int64 { readings.first?.timeMs ?? 0 }
    package var lastMs: Int64 { readings.last?.timeMs ?? 0 }
}

/// Finds the episodes of one rule in a slice of stored readings (the Anomaly Detection module's
/// algorithm, pure: the detector fetches the slice and stores what this finds).
///
/// An episode counts when it contains a reading this upload stored, its newest reading is
/// recent (history — an import, yesterday's sync — never alerts, as for AutomatedSOS) and that
/// reading's local time is inside the rule's active hours. Readings are in sample-time order,
/// so a late reading lands where it belongs: it may complete an episode, or break one (a normal
/// reading between two abnormal ones ends the run).
package struct WatchEpisodes: Sendable {
    /// As `AbnormalRunRule.maximumReadingAge`: an episode whose newest reading is older than this
    /// when it completes is history.
    package static let maximumReadingAge: Int64 = 300_000

    let comparison: WatchComparison
    let persistence: WatchPersistence
    let activeHours: ActiveHours?
    let timeZone: TimeZone

    package init(comparison: WatchComparison, persistence: WatchPersistence, activeHours: ActiveHours?, timeZone: TimeZone) {
        self.comparison = comparison
        self.persistence = persistence
        self.activeHours = activeHours
        self.timeZone = timeZone
    }

    /// The finder of a rule's episodes (its active hours read in `timeZone`).
    package init(_ rule: WatchRuleSettings, timeZone: TimeZone = .gmt) {
        self.init(comparison: rule.comparison, persistence: rule.persistence, activeHours: rule.activeHours, timeZone: timeZone)
    }

    /// The longest gap between two readings of a sustained run: half the duration, at least 5 and
    /// at most 15 minutes (an Apple Watch measures heart rate every few minutes at rest; a gap
    /// longer than that is a time nobody knows about).
    package static func maximumGapMs(sustaining duration: Int64) -> Int64 {
        min(max(duration / 2, 300_000), 900_000)
    }

    /// The longest gap between two readings of a run of consecutive readings: a reading three
    /// hours after the last one starts a new episode (a meter read at breakfast and at dinner,
    /// both low, is two hypos, not one).
    package static let consecutiveGapMs: Int64 = 3 * 3_600_000

    /// How far around the new readings the detector must read: time on each side, and a number
    /// of readings beyond that on each side.
    package var context: (milliseconds: Int64, readings: Int) {
        switch persistence {
        case .consecutive(let count): (0, count)
        case .sustained(let duration): (duration + Self.maximumGapMs(sustaining: duration), 1)
        case .aggregate(_, let window): (window, 1)
        }
    }

    /// Whether an upload whose new readings are `new` can be part of an episode at all: a run
    /// of readings that meet the condition must contain a new one, so when none of them meets it
    /// there is nothing to read (the common case: a normal reading costs no read). An aggregate's
    /// window may meet it with any new reading.
    package func mayFindEpisodes(with new: [StoredReading]) -> Bool {
        if case .aggregate = persistence { return true }
        return new.contains { comparison.isMet(by: $0.value) }
    }

    package func episodes(in readings: [StoredReading], new: Set<ReadingIdentity>, receivedAtMs: Int64) -> [WatchEpisode] {
        let found: [[StoredReading]] =
            switch persistence {
            case .consecutive(let count): runs(in: readings, maximumGapMs: Self.consecutiveGapMs).filter { $0.count >= max(count, 1) }
            case .sustained(let duration):
                runs(in: readings, maximumGapMs: Self.maximumGapMs(sustaining: duration)).filter { run in
                    guard let first = run.first, let last = run.last else { return false }
                    return last.timeMs - first.timeMs >= duration
                }
            case .aggregate(let statistic, let window): aggregateEpisodes(in: readings, statistic: statistic, windowMs: window)
            }
        return found.filter { episode in
            guard let last = episode.last, last.timeMs >= receivedAtMs - Self.maximumReadingAge else { return false }
            guard episode.contains(where: { new.contains($0.identity) }) else { return false }
            return activeHours.map { $0.contains(minuteOfDay: minuteOfDay(last.timeMs)) } ?? true
        }.map(WatchEpisode.init(readings:))
    }

    /// Maximal runs of readings that meet the condition, broken by one that does not and by a gap
    /// longer than `maximumGapMs`.
    private func runs(in readings: [StoredReading], maximumGapMs: Int64) -> [[StoredReading]] {
        var runs: [[StoredReading]] = []
        var run: [StoredReading] = []
        for reading in readings {
            if let last = run.last, reading.timeMs - last.timeMs > maximumGapMs {
                runs.append(run)
                run = []
            }
            if comparison.isMet(by: reading.value) {
                run.append(reading)
            } else if !run.isEmpty {
                runs.append(run)
                run = []
            }
        }
        if !run.isEmpty { runs.append(run) }
        return runs
    }

    /// Each reading closes a window `(time - window, time]`; the window counts once its readings
    /// span at least half of it (one reading is not an average over 30 minutes). Consecutive
    /// readings whose windows meet the condition make one episode: their windows' readings.
    private func aggregateEpisodes(in readings: [StoredReading], statistic: WatchAggregate, windowMs: Int64) -> [[StoredReading]] {
        var episodes: [[StoredReading]] = []
        var episodeStart: Int?
        var windowStart = 0
        func close(at end: Int) {
            if let start = episodeStart { episodes.append(Array(readings[start...end])) }
            episodeStart = nil
        }
        for index in readings.indices {
            let time = readings[index].timeMs
            while readings[windowStart].timeMs <= time - windowMs { windowStart += 1 }
            let window = readings[windowStart...index]
            let spansEnough = time - readings[windowStart].timeMs >= windowMs / 2
            if spansEnough, comparison.isMet(by: Self.statistic(statistic, of: window.map(\.value))) {
                if episodeStart == nil { episodeStart = windowStart }
            } else if index > 0 {
                close(at: index - 1)
            } else {
                episodeStart = nil
            }
        }
        if let last = readings.indices.last { close(at: last) }
        return episodes
    }

    static func statistic(_ statistic: WatchAggregate, of values: [Float]) -> Float {
        guard !values.isEmpty else { return .nan }
        switch statistic {
        case .average: return Float(values.reduce(0.0) { $0 + Double($1) } / Double(values.count))
        case .min: return values.min() ?? .nan
        case .max: return values.max() ?? .nan
        case .median:
            let sorted = values.sorted()
            let middle = sorted.count / 2
            return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        }
    }

    private func minuteOfDay(_ timeMs: Int64) -> Int {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.hour, .minute], from: Date(timeIntervalSince1970: Double(timeMs) / 1000))
        return (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
    }
}
