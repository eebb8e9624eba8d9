import Foundation

/// A heart-rate dynamic profile (the Hactive system's): a stretch of a workout where the heart
/// rate rises without falling for at least 20 s, ends above 50 % of the maximum heart rate, and
/// rises by at least 10 % — with its curve rescaled to 100 points over 100 s so that profiles of
/// different lengths and workouts compare.
package struct HeartRateProfile: Sendable, Equatable, Codable {
    package var startMs: Int64
    package var endMs: Int64
    package var startBpm: Double
    package var endBpm: Double
    /// (end − start) / start, in per cent.
    package var risePercent: Double
    /// bpm per second over the profile.
    package var slope: Double
    /// How far the heart rate fell in the 30 s after the profile's end (nil without readings there).
    package var recoveryBpm: Double?
    /// 100 values: the curve linearly interpolated at 100 evenly spaced times from start to end.
    package var curve: [Double]
}

/// Finds dynamic profiles in a workout's heart rate.
///
/// Rules, each pinned by a test on a constructed series:
/// - a run is a maximal sequence of readings, each no lower than the one before ("without
///   falling": equal is not a fall), with no two consecutive readings more than
///   `HeartRateGaps.maximumMs` apart; a single lower reading ends it;
/// - it qualifies when it lasts at least 20 s (last reading's time − first's ≥ 20 s), its last
///   reading is strictly above 50 % of the maximum heart rate, and it rose by at least 10 %
///   (end ≥ 1.1 × start, compared as end × 10 ≥ start × 11 so that 10 % exactly is in).
package enum HeartRateProfiles {
    package static let minimumDurationMs: Int64 = 20_000
    package static let curvePoints = 100
    package static let recoveryWindowMs: Int64 = 30_000

    /// The profiles of `points` (sorted by time), given the maximum heart rate.
    package static func find(in points: [HeartRatePoint], maximum: Double) -> [HeartRateProfile] {
        var profiles: [HeartRateProfile] = []
        guard points.count >= 2 else { return profiles }
        var runStart = 0
        func close(_ runEnd: Int) {
            guard runEnd > runStart else { return }
            let first = points[runStart], last = points[runEnd]
            guard last.timeMs - first.timeMs >= minimumDurationMs, last.bpm > maximum / 2, first.bpm > 0,
                last.bpm * 10 >= first.bpm * 11
            else { return }
            let seconds = Double(last.timeMs - first.timeMs) / 1000
            profiles.append(
                HeartRateProfile(
                    startMs: first.timeMs, endMs: last.timeMs, startBpm: first.bpm, endBpm: last.bpm,
                    risePercent: (last.bpm - first.bpm) / first.bpm * 100, slope: (last.bpm - first.bpm) / seconds,
                    recoveryBpm: recovery(after: runEnd, in: points), curve: curve(points[runStart...runEnd])))
        }
        for index in 1..<points.count {
            let previous = points[index - 1], current = points[index]
            if current.bpm < previous.bpm || current.timeMs - previous.timeMs > HeartRateGaps.maximumMs {
                close(index - 1)
                runStart = index
            }
        }
        close(points.count - 1)
        return profiles
    }

    /// The drop from the profile's last reading to the lowest reading of the next 30 s.
    static func recovery(after end: Int, in points: [HeartRatePoint]) -> Double? {
        let peak = points[end]
        var lowest: Double?
        var index = end + 1
        while index < points.count, points[index].timeMs - peak.timeMs <= recoveryWindowMs {
            lowest = min(lowest ?? points[index].bpm, points[index].bpm)
            index += 1
        }
        return lowest.map { peak.bpm - $0 }
    }

    /// The run's curve at `curvePoints` evenly spaced times, linearly interpolated.
    static func curve(_ run: ArraySlice<HeartRatePoint>) -> [Double] {
        let first = run.first!, last = run.last!
        let span = Double(last.timeMs - first.timeMs)
        var values: [Double] = []
        values.reserveCapacity(curvePoints)
        var cursor = run.startIndex
        for step in 0..<curvePoints {
            let time = Double(first.timeMs) + span * Double(step) / Double(curvePoints - 1)
            while cursor + 1 < run.endIndex, Double(run[cursor + 1].timeMs) < time { cursor += 1 }
            let a = run[cursor], b = run[min(cursor + 1, run.endIndex - 1)]
            let width = Double(b.timeMs - a.timeMs)
            let fraction = width > 0 ? min(max((time - Double(a.timeMs)) / width, 0), 1) : 0
            values.append(((a.bpm + (b.bpm - a.bpm) * fraction) * 10).rounded() / 10)
        }
        return values
    }
}
