import Data4HelpCore
import DatabaseLink
import Foundation
import HealthSharing

/// AutomatedSOS as a watch rule: the design's algorithm — an abnormal reading increments a
/// counter, a normal one resets it, and the N-th consecutive abnormal reading makes an
/// emergency — is a rule of severity `emergency` per monitored type (`below` the minimum heart
/// rate, or `outside` the minimum and maximum; `below` the minimum oxygen saturation; over N
/// `consecutive` readings), found by the same `WatchEpisodes` as every other watch rule. There is
/// no second detector: what differs is the action, an incident and an ambulance instead of an
/// alert.
///
/// "Consecutive" is in sample-time order over what is stored, so a late reading counts where it
/// belongs and a resent duplicate (stored once) counts once; like every consecutive rule, a gap of
/// more than three hours starts a new run. Evaluated afresh from PostgreSQL at every upload rather
/// than kept as a counter in one process, it is the same on every instance and survives restarts.
package struct AbnormalRunRule: Sendable {
    /// A run whose newest reading is older than this when it completes is history, not an
    /// emergency (a phone syncing yesterday's readings must not send an ambulance today).
    package static let maximumReadingAge = TimeInterval(WatchEpisodes.maximumReadingAge) / 1000

    /// A location fix older than this when an incident opens is stale: the dispatch centre is
    /// told to look for the person in their home area too.
    package static let locationStaleAfter = Duration.seconds(15 * 60)

    let monitored: MonitoredReadings

    package init(_ monitored: MonitoredReadings) {
        self.monitored = monitored
    }

    /// Whether a reading of this type is outside the individual's thresholds. Types without a
    /// threshold set are never abnormal.
    package func isAbnormal(_ value: Float, type: SampleType) -> Bool {
        monitored.thresholds.rule(for: type)?.comparison.isMet(by: value) ?? false
    }

    /// The runs of at least N consecutive abnormal readings that contain a new reading and are
    /// recent, each as seen in `monitored.readings` (oldest first).
    package func emergencies(type: SampleType, new: Set<ReadingIdentity>, receivedAt: Date) -> [AbnormalRun] {
        guard let rule = monitored.thresholds.rule(for: type) else { return [] }
        return WatchEpisodes(rule).episodes(in: monitored.readings, new: new, receivedAtMs: receivedAt.epochMilliseconds).map {
            AbnormalRun(typeCode: type.storageCode, readings: $0.readings)
        }
    }
}

extension SOSThresholds {
    /// The emergency rule AutomatedSOS watches `type` with; nil for a type it does not watch or
    /// has no threshold for.
    package func rule(for type: SampleType) -> WatchRuleSettings? {
        switch type {
        case .heartRate: heartRateRule
        case .oxygenSaturation: minOxygenSaturation.map { emergency(.below($0), on: type) }
        default: nil
        }
    }

    /// The emergency rule on heart rate: below the minimum, or outside minimum–maximum.
    package var heartRateRule: WatchRuleSettings {
        emergency(maxHeartRate.map { .outside(low: minHeartRate, high: $0) } ?? .below(minHeartRate), on: .heartRate)
    }

    private func emergency(_ comparison: WatchComparison, on type: SampleType) -> WatchRuleSettings {
        WatchRuleSettings(
            name: "AutomatedSOS", typeCode: type.storageCode, comparison: comparison, persistence: .consecutive(max(consecutiveReadings, 1)),
            severity: .emergency, notifyDevice: false, throttleSeconds: 0, template: "automatedSOS")
    }
}

/// Which stored reading: its time and de-duplication key.
package struct ReadingIdentity: Hashable, Sendable {
    let timeMs: Int64
    let key: Int64
}

extension StoredReading {
    package var identity: ReadingIdentity { ReadingIdentity(timeMs: timeMs, key: key) }
}
