import Foundation

/// Where a fix lies relative to the course.
package struct CoursePosition: Sendable, Equatable {
    /// Metres along the course from the start: never less than the runner's previous position.
    package let distanceMeters: Double
    /// Metres from the fix to the nearest point of the searched stretch of the course.
    package let offsetMeters: Double
}

/// Projects runners' fixes onto a course so that progress is monotone and loops and
/// out-and-back courses resolve to the right leg.
///
/// Only the stretch a runner can have covered is searched — from a little behind their previous
/// position to `reach` metres ahead — so a fix on a leg that passes the same place twice (the
/// way back of an out-and-back, the second lap of a loop) matches the leg the runner is on.
/// Among near-equal matches the nearest one ahead of the previous position wins (at a
/// turnaround both legs match equally well, and the runner is going on, not back); with none
/// ahead, the nearest behind. Distances are computed in a
/// local equirectangular plane per segment: exact enough for segments of a few kilometres.
package struct CourseProjection: Sendable {
    /// Farther than this from the course is off course.
    package static let offCourseMeters = 50.0
    /// This close to the end counts as finished.
    package static let finishToleranceMeters = 25.0
    /// How far behind the previous position a match may lie (GPS jitter), metres.
    static let backtrack = 50.0
    /// Matches within this of the best one count as equally good (the earliest wins), metres.
    static let tie = 5.0

    package let path: GeoPath

    package init(path: GeoPath) {
        self.path = path
    }

    /// Projects `fix`, never behind `previous`. `reach`: the most the runner can have advanced
    /// since (elapsed time × the fastest plausible speed, plus accuracy); nil searches the whole
    /// course (a runner's first fix).
    package func project(_ fix: GeoPoint, after previous: Double?, reach: Double?) -> CoursePosition {
        let low = max(0, (previous ?? 0) - Self.backtrack)
        let high = reach.map { min(path.lengthMeters, (previous ?? 0) + $0) } ?? path.lengthMeters
        var candidates: [(along: Double, offset: Double)] = []
        for index in 0..<(path.points.count - 1) {
            let start = path.cumulative[index], end = path.cumulative[index + 1]
            guard end >= low, start <= high else { continue }
            let (fraction, offset) = Self.nearest(fix, from: path.points[index], to: path.points[index + 1])
            let length = end - start
            // Keep the match inside the searched stretch of this segment.
            let lowest = length > 0 ? max(0, (low - start) / length) : 0
            let highest = length > 0 ? min(1, (high - start) / length) : 1
            let clamped = min(max(fraction, lowest), highest)
            let distance =
                clamped == fraction
                ? offset
                : Self.nearest(fix, from: path.points[index], to: path.points[index + 1], at: clamped)
            candidates.append((start + clamped * length, distance))
        }
        guard let best = candidates.map(\.offset).min() else {
            return CoursePosition(distanceMeters: previous ?? 0, offsetMeters: fix.distance(to: path.points[0]))
        }
        let near = candidates.filter { $0.offset <= best + Self.tie }
        let from = previous ?? 0
        let chosen = near.filter { $0.along >= from }.min { $0.along < $1.along } ?? near.max { $0.along < $1.along }!
        return CoursePosition(distanceMeters: max(previous ?? 0, chosen.along), offsetMeters: chosen.offset)
    }

    /// The fraction along segment a→b of the point nearest to p, and its distance in metres.
    static func nearest(_ p: GeoPoint, from a: GeoPoint, to b: GeoPoint) -> (fraction: Double, meters: Double) {
        let (px, py) = plane(p, around: a), (bx, by) = plane(b, around: a)
        let squared = bx * bx + by * by
        let fraction = squared > 0 ? min(1, max(0, (px * bx + py * by) / squared)) : 0
        return (fraction, hypot(px - fraction * bx, py - fraction * by))
    }

    /// The distance in metres from p to the point at `fraction` along a→b.
    static func nearest(_ p: GeoPoint, from a: GeoPoint, to b: GeoPoint, at fraction: Double) -> Double {
        let (px, py) = plane(p, around: a), (bx, by) = plane(b, around: a)
        return hypot(px - fraction * bx, py - fraction * by)
    }

    /// Metres east and north of `origin`.
    static func plane(_ point: GeoPoint, around origin: GeoPoint) -> (x: Double, y: Double) {
        let radians = Double.pi / 180
        let x = (point.longitude - origin.longitude) * radians * cos(origin.latitude * radians) * GeoPoint.earthRadius
        let y = (point.latitude - origin.latitude) * radians * GeoPoint.earthRadius
        return (x, y)
    }
}
