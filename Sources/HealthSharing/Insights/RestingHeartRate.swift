import Data4HelpCore
import Foundation

/// Resting heart rate: the lowest *sustained* 5-minute mean of a night.
///
/// The heart rate between readings is the last reading, held until the next one when that comes
/// within 10 minutes (a watch asleep reads every few minutes; one that reads every second holds
/// each reading a second); a reading followed by a longer gap, or by the night's end, holds
/// nothing. A 5-minute window counts only when the rate is defined over all of it: windows across
/// a gap of more than 10 minutes, or past the night's end, are left out. Its
/// mean is time-weighted. Windows start at each reading.
///
/// A night of local day D: from 00:00 to 06:00 in the person's time zone, and every sleep
/// interval that began between 18:00 the day before and 12:00 on D (so a late sleeper's night
/// counts whole). A night with no complete window has no resting heart rate.
package enum RestingHeartRate {
    /// Changes whenever the rule changes, so that every kept night is computed again.
    package static let version = 1
    package static let windowMs: Int64 = 300_000
    package static let maximumHoldMs: Int64 = 600_000

    /// The lowest complete window's mean, and where it starts; nil when no window is complete.
    package static func lowestSustainedMean(_ points: [HeartRatePoint]) -> (bpm: Double, startMs: Int64)? {
        guard points.count >= 2 else { return nil }
        var best: (bpm: Double, startMs: Int64)?
        // Prefix integrals of the held step function: area[k] = ∫ from points[0] to points[k].
        var area = [Double](repeating: 0, count: points.count)
        var brokenBefore = [Int](repeating: 0, count: points.count)  // gaps longer than the hold up to k
        for k in 1..<points.count {
            let width = points[k].timeMs - points[k - 1].timeMs
            area[k] = area[k - 1] + points[k - 1].bpm * Double(width)
            brokenBefore[k] = brokenBefore[k - 1] + (width > maximumHoldMs ? 1 : 0)
        }
        var end = 0  // the last reading at or before the window's end
        for start in 0..<points.count {
            let windowEnd = points[start].timeMs + windowMs
            if end < start { end = start }
            while end + 1 < points.count, points[end + 1].timeMs <= windowEnd { end += 1 }
            // Complete: the window ends on a reading, or its last reading holds to its end — the
            // next reading comes within the hold (a reading followed by a longer gap, or by the
            // night's end, holds nothing) — and no gap inside is longer than the hold.
            let held = windowEnd - points[end].timeMs
            let holds = end + 1 < points.count && points[end + 1].timeMs - points[end].timeMs <= maximumHoldMs
            guard held == 0 || holds else { continue }
            guard brokenBefore[end] - brokenBefore[start] == 0 else { continue }
            let integral = area[end] - area[start] + points[end].bpm * Double(held)
            let mean = integral / Double(windowMs)
            if best == nil || mean < best!.bpm { best = (mean, points[start].timeMs) }
        }
        return best
    }

    /// The night windows of local day `day` (its midnight in the person's time zone) given the
    /// person's sleep intervals (milliseconds), merged and in time order.
    package static func night(of dayStart: Date, calendar: Calendar, sleep: [(startMs: Int64, endMs: Int64)]) -> [(startMs: Int64, endMs: Int64)] {
        let midnight = dayStart.epochMilliseconds
        let six = calendar.date(byAdding: .hour, value: 6, to: dayStart)!.epochMilliseconds
        let eveningBefore = calendar.date(byAdding: .hour, value: -6, to: dayStart)!.epochMilliseconds
        let noon = calendar.date(byAdding: .hour, value: 12, to: dayStart)!.epochMilliseconds
        var intervals = [(startMs: midnight, endMs: six)]
        intervals += sleep.filter { $0.startMs >= eveningBefore && $0.startMs < noon && $0.endMs > $0.startMs }
        intervals.sort { $0.startMs < $1.startMs }
        var merged: [(startMs: Int64, endMs: Int64)] = []
        for interval in intervals {
            if let last = merged.last, interval.startMs <= last.endMs {
                merged[merged.count - 1].endMs = max(last.endMs, interval.endMs)
            } else {
                merged.append(interval)
            }
        }
        return merged
    }

    /// The resting heart rate of the night: the lowest complete window in any of its intervals
    /// (a window never spans two intervals). `points` sorted by time.
    package static func ofNight(_ intervals: [(startMs: Int64, endMs: Int64)], points: [HeartRatePoint]) -> (bpm: Double, startMs: Int64)? {
        var best: (bpm: Double, startMs: Int64)?
        for interval in intervals {
            let lower = points.partitioningIndex { $0.timeMs >= interval.startMs }
            let upper = points.partitioningIndex { $0.timeMs >= interval.endMs }
            guard upper - lower >= 2, let found = lowestSustainedMean(Array(points[lower..<upper])) else { continue }
            if best == nil || found.bpm < best!.bpm { best = found }
        }
        return best
    }
}

extension Array {
    /// The first index whose element satisfies `belongs` (which is false, then true, along the array).
    func partitioningIndex(where belongs: (Element) -> Bool) -> Int {
        var low = 0, high = count
        while low < high {
            let middle = (low + high) / 2
            if belongs(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
