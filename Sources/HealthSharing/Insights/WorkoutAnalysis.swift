import Data4HelpCore
import Foundation

/// What a workout's analysis says (HealthSharing's Data Elaboration, goal G5 of the design):
/// its totals, time in heart-rate zones, the dynamic profiles found, computed once and kept.
package struct WorkoutAnalysis: Sendable, Equatable, Codable {
    /// Bumped when the computation changes: a kept analysis of another version is recomputed.
    package static let version = 1

    package var version: Int
    package var durationSeconds: Double
    package var distanceMetres: Double?
    /// Seconds per kilometre and metres per second, when there is a distance.
    package var paceSecondsPerKilometre: Double?
    package var speedMetresPerSecond: Double?
    /// Metres climbed, from the route's altitudes (rises under 2 m are noise); nil without altitudes.
    package var elevationGainMetres: Double?
    package var averageHeartRate: Double?
    package var maximumHeartRateReached: Double?
    package var maximumHeartRate: MaximumHeartRate
    package var zones: HeartRateZones
    package var profiles: [HeartRateProfile]
    /// Heart-rate readings the analysis read.
    package var readings: Int

    /// Mean slope (bpm/s) and recovery (bpm in 30 s) of the profiles; nil without profiles.
    package var averageProfileSlope: Double? {
        profiles.isEmpty ? nil : profiles.map(\.slope).reduce(0, +) / Double(profiles.count)
    }
    package var averageRecovery: Double? {
        let recoveries = profiles.compactMap(\.recoveryBpm)
        return recoveries.isEmpty ? nil : recoveries.reduce(0, +) / Double(recoveries.count)
    }

    /// Analyses a workout from its heart rate and route (both sorted by time).
    package static func of(
        _ workout: Workout, heartRate: [HeartRatePoint], route: [(timeMs: Int64, latitude: Double, longitude: Double, altitude: Double?)],
        maximum: MaximumHeartRate
    ) -> WorkoutAnalysis {
        let startMs = workout.start.epochMilliseconds, endMs = workout.end.epochMilliseconds
        let duration = Double(endMs - startMs) / 1000
        let distance = workout.distanceMetres ?? routeDistance(route)
        let moving = distance.flatMap { $0 > 0 && duration > 0 ? $0 : nil }
        let inWindow = heartRate.filter { $0.timeMs >= startMs && $0.timeMs <= endMs }
        return WorkoutAnalysis(
            version: version, durationSeconds: duration, distanceMetres: distance,
            paceSecondsPerKilometre: moving.map { duration / ($0 / 1000) }, speedMetresPerSecond: moving.map { $0 / duration },
            elevationGainMetres: elevationGain(route.compactMap(\.altitude)),
            averageHeartRate: inWindow.isEmpty ? nil : inWindow.map(\.bpm).reduce(0, +) / Double(inWindow.count),
            maximumHeartRateReached: inWindow.map(\.bpm).max(), maximumHeartRate: maximum,
            zones: HeartRateZones.of(inWindow, startMs: startMs, endMs: endMs, maximum: maximum.bpm),
            profiles: HeartRateProfiles.find(in: inWindow, maximum: maximum.bpm), readings: inWindow.count)
    }

    /// The route's length along the great circle (metres); nil with fewer than two fixes.
    static func routeDistance(_ route: [(timeMs: Int64, latitude: Double, longitude: Double, altitude: Double?)]) -> Double? {
        guard route.count >= 2 else { return nil }
        var total = 0.0
        for index in 1..<route.count {
            total += haversine(route[index - 1].latitude, route[index - 1].longitude, route[index].latitude, route[index].longitude)
        }
        return total
    }

    static func haversine(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let radius = 6_371_008.8, rad = Double.pi / 180
        let dLat = (lat2 - lat1) * rad, dLon = (lon2 - lon1) * rad
        let a = sin(dLat / 2) * sin(dLat / 2) + cos(lat1 * rad) * cos(lat2 * rad) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * radius * asin(min(1, sqrt(a)))
    }

    /// Metres climbed: a climb counts from its low to its high once the altitude turns down by
    /// more than 2 m (or the route ends), and only if it rose 2 m or more — so GPS altitude noise
    /// does not add up.
    static func elevationGain(_ altitudes: [Double]) -> Double? {
        guard var low = altitudes.first else { return nil }
        var high = low, gain = 0.0
        for altitude in altitudes.dropFirst() {
            if altitude > high {
                high = altitude
            } else if altitude < high - 2 {
                if high - low >= 2 { gain += high - low }
                (low, high) = (altitude, altitude)
            }
            if altitude < low { (low, high) = (altitude, altitude) }
        }
        if high - low >= 2 { gain += high - low }
        return gain
    }
}
