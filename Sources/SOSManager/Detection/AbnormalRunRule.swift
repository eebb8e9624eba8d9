import DatabaseLink
import Foundation
import HealthSharing

/// The design's algorithm over stored readings: an abnormal reading increments a counter, a
/// normal one resets it, and the N-th consecutive abnormal reading makes an emergency.
///
/// "Consecutive" is in sample-time order over what is stored, so a late reading counts where it
/// belongs and a resent duplicate (stored once) counts once. Evaluated afresh from PostgreSQL at
/// every upload rather than kept as a counter in one process, it is the same on every instance
/// and survives restarts.
package struct AbnormalRunRule: Sendable {
    /// A run whose newest reading is older than this when it completes is history, not an
    /// emergency (a phone syncing yesterday's readings must not send an ambulance today).
    package static let maximumReadingAge: TimeInterval = 300

    /// A location fix older than this when an incident opens is stale: the dispatch centre is
    /// told to look for the person in their home area too.
    package static let locationStaleAfter = Duration.seconds(15 * 60)

    let thresholds: MonitoredReadings

    package init(_ thresholds: MonitoredReadings) {
        self.thresholds = thresholds
    }

    /// Whether a reading of this type is outside the individual's thresholds. Types without a
    /// threshold set are never abnormal.
    package func isAbnormal(_ value: Float, type: SampleType) -> Bool {
        switch type {
        case .heartRate: value < thresholds.minHeartRate || thresholds.maxHeartRate.map { value > $0 } == true
        case .oxygenSaturation: thresholds.minOxygenSaturation.map { value < $0 } == true
        default: false
        }
    }

    /// The runs of at least N consecutive abnormal readings that contain a new reading and are
    /// recent, each as seen in `thresholds.readings` (oldest first).
    package func emergencies(type: SampleType, new: Set<ReadingIdentity>, receivedAt: Date) -> [AbnormalRun] {
        let needed = max(thresholds.consecutiveReadings, 1)
        let newestAllowed = receivedAt.epochMilliseconds - Int64(Self.maximumReadingAge * 1000)
        var runs: [AbnormalRun] = []
        var run: [StoredReading] = []
        func close() {
            if run.count >= needed, run.contains(where: { new.contains($0.identity) }), let last = run.last, last.timeMs >= newestAllowed {
                runs.append(AbnormalRun(typeCode: type.storageCode, readings: run))
            }
            run = []
        }
        for reading in thresholds.readings {
            if isAbnormal(reading.value, type: type) { run.append(reading) } else { close() }
        }
        close()
        return runs
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
