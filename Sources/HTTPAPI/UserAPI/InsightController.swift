import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// `GET /api/users/workouts/{workoutId}/analysis` and `GET /api/users/insights?from=&to=`: the
/// Data Elaboration of the person's own workouts and heart rate (goal G5). Another person's
/// workout is 404.
struct InsightController {
    let insights: InsightService

    func addRoutes(to group: some RouterMethods<IndividualRequestContext>) {
        group.get("workouts/{workoutId}/analysis") { _, context in
            WorkoutInsightBody(
                try await insights.workout(try context.parameters.id("workoutId", missing: InsightError.workoutNotFound), of: context.individual))
        }
        group.get("insights") { request, context in
            var fields = FieldValidator()
            let query = request.uri.queryParameters
            let to = fields.optional("to", query["to"].map(String.init), TimeRangeQuery.instant) ?? Date()
            let from = fields.optional("from", query["from"].map(String.init), TimeRangeQuery.instant) ?? to.addingTimeInterval(-90 * 86_400)
            if from >= to { fields.fail("to", "must be later than from") }
            try fields.finish()
            return InsightsBody(try await insights.insights(of: context.individual, from: from, to: to))
        }
    }
}

/// A workout's analysis on the wire (`WorkoutAnalysis` in the OpenAPI document).
struct WorkoutInsightBody: ResponseEncodable, Sendable {
    struct Profile: Encodable, Sendable {
        let start: String
        let end: String
        let startBpm: Double
        let endBpm: Double
        let risePercent: Double
        let slope: Double
        @Nullable var recoveryBpm: Double?
        let curve: [Double]
    }

    struct Zones: Encodable, Sendable {
        let seconds: [Double]
        let unmeasuredSeconds: Double
        /// Lower bounds of zones 2–5 in bpm.
        let bounds: [Double]
    }

    struct Figures: Encodable, Sendable {
        let workoutId: String
        let start: String
        let durationSeconds: Double
        @Nullable var averageHeartRate: Double?
        let profiles: Int
        @Nullable var averageProfileSlope: Double?
        @Nullable var averageRecovery: Double?

        init(_ workout: Workout, _ analysis: WorkoutAnalysis) {
            workoutId = workout.id.wireString
            start = WireFormat.timestamp(workout.start)
            durationSeconds = analysis.durationSeconds
            averageHeartRate = analysis.averageHeartRate.map { ($0 * 10).rounded() / 10 }
            profiles = analysis.profiles.count
            averageProfileSlope = analysis.averageProfileSlope.map { ($0 * 1000).rounded() / 1000 }
            averageRecovery = analysis.averageRecovery.map { ($0 * 10).rounded() / 10 }
        }
    }

    let workoutId: String
    let activity: String
    let durationSeconds: Double
    @Nullable var distanceMetres: Double?
    @Nullable var paceSecondsPerKilometre: Double?
    @Nullable var speedMetresPerSecond: Double?
    @Nullable var elevationGainMetres: Double?
    @Nullable var averageHeartRate: Double?
    @Nullable var maximumHeartRateReached: Double?
    let maximumHeartRate: Double
    let maximumHeartRateSource: String
    let readings: Int
    let zones: Zones
    let profiles: [Profile]
    /// This workout and the earlier ones of the same activity, latest first: the profiles'
    /// average slope and recovery over time.
    let comparison: [Figures]

    init(_ insight: WorkoutInsight) {
        self.init(insight.workout, insight.analysis, earlier: insight.earlier)
    }

    init(_ workout: Workout, _ analysis: WorkoutAnalysis, earlier: [(workout: Workout, analysis: WorkoutAnalysis)]) {
        let time = { (ms: Int64) in WireFormat.timestamp(milliseconds: ms) }
        func rounded(_ value: Double?, _ places: Double = 10) -> Double? { value.map { ($0 * places).rounded() / places } }
        workoutId = workout.id.wireString
        activity = workout.activity
        durationSeconds = analysis.durationSeconds
        distanceMetres = rounded(analysis.distanceMetres)
        paceSecondsPerKilometre = rounded(analysis.paceSecondsPerKilometre)
        speedMetresPerSecond = rounded(analysis.speedMetresPerSecond, 100)
        elevationGainMetres = rounded(analysis.elevationGainMetres)
        averageHeartRate = rounded(analysis.averageHeartRate)
        maximumHeartRateReached = analysis.maximumHeartRateReached
        maximumHeartRate = analysis.maximumHeartRate.bpm
        maximumHeartRateSource = analysis.maximumHeartRate.source.rawValue
        readings = analysis.readings
        zones = Zones(
            seconds: analysis.zones.seconds, unmeasuredSeconds: analysis.zones.unmeasuredSeconds,
            bounds: HeartRateZones.bounds.map { ($0 * analysis.maximumHeartRate.bpm * 10).rounded() / 10 })
        profiles = analysis.profiles.map { profile in
            Profile(
                start: time(profile.startMs), end: time(profile.endMs), startBpm: profile.startBpm, endBpm: profile.endBpm,
                risePercent: (profile.risePercent * 10).rounded() / 10, slope: (profile.slope * 1000).rounded() / 1000,
                recoveryBpm: profile.recoveryBpm, curve: profile.curve)
        }
        comparison = [Figures(workout, analysis)] + earlier.map { Figures($0.workout, $0.analysis) }
    }
}

/// `GET /api/users/insights`.
struct InsightsBody: ResponseEncodable, Sendable {
    struct Day: Encodable, Sendable {
        let day: String
        @Nullable var bpm: Double?
        @Nullable var windowStart: String?
    }

    struct Trend: Encodable, Sendable {
        let days: Int
        let daysWithValue: Int
        @Nullable var mean: Double?
        @Nullable var slopePerWeek: Double?
    }

    struct Week: Encodable, Sendable {
        let week: String
        let workouts: Int
        let zoneSeconds: [Double]
    }

    let timeZone: String
    let maximumHeartRate: Double
    let maximumHeartRateSource: String
    let restingHeartRate: [Day]
    let trends: [Trend]
    let weeklyLoad: [Week]

    init(_ insights: Insights) {
        timeZone = insights.timeZone
        maximumHeartRate = insights.maximum.bpm
        maximumHeartRateSource = insights.maximum.source.rawValue
        restingHeartRate = insights.restingHeartRate.map {
            Day(day: $0.day, bpm: $0.bpm, windowStart: $0.windowStartMs.map { WireFormat.timestamp(milliseconds: $0) })
        }
        trends = insights.trends.map { Trend(days: $0.days, daysWithValue: $0.daysWithValue, mean: $0.mean, slopePerWeek: $0.slopePerWeek) }
        weeklyLoad = insights.weeklyLoad.map { Week(week: $0.week, workouts: $0.workouts, zoneSeconds: $0.zoneSeconds) }
    }
}
