import Foundation

/// Time in the five heart-rate zones of a window, from the maximum heart rate: zone 1 below
/// 60 % (easy, everything under it included), 2 from 60 %, 3 from 70 %, 4 from 80 %, 5 from
/// 90 %. Each reading holds until the next one, or for at most `HeartRateGaps.maximumMs` when the
/// next is further; time with no reading holding is `unmeasuredSeconds`. The zones and the
/// unmeasured time add up to the window exactly.
package struct HeartRateZones: Sendable, Equatable, Codable {
    /// Lower bounds of zones 2–5, as fractions of the maximum.
    package static let bounds = [0.6, 0.7, 0.8, 0.9]

    package var seconds: [Double]
    package var unmeasuredSeconds: Double

    package init(seconds: [Double], unmeasuredSeconds: Double) {
        self.seconds = seconds
        self.unmeasuredSeconds = unmeasuredSeconds
    }

    /// The zone (0–4) of a reading.
    package static func zone(of bpm: Double, maximum: Double) -> Int {
        Self.bounds.lastIndex { bpm >= $0 * maximum }.map { $0 + 1 } ?? 0
    }

    /// Zones of `points` (sorted by time) within `[startMs, endMs)`.
    package static func of(_ points: [HeartRatePoint], startMs: Int64, endMs: Int64, maximum: Double) -> HeartRateZones {
        var milliseconds = [Int64](repeating: 0, count: 5)
        var measured: Int64 = 0
        for (index, point) in points.enumerated() {
            let next = index + 1 < points.count ? points[index + 1].timeMs : Int64.max
            let from = max(point.timeMs, startMs)
            let until = min(next, point.timeMs &+ HeartRateGaps.maximumMs, endMs)
            guard until > from else { continue }
            milliseconds[zone(of: point.bpm, maximum: maximum)] += until - from
            measured += until - from
        }
        let total = max(endMs - startMs, 0)
        return HeartRateZones(seconds: milliseconds.map { Double($0) / 1000 }, unmeasuredSeconds: Double(total - measured) / 1000)
    }
}
