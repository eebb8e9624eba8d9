import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// `/me/workouts`: my workouts, latest first, and one with its figures, its route drawn, its
/// heart-rate curve with the dynamic profiles over it, its zones and how it compares with my
/// earlier ones (all SVG drawn here: no map tiles to fetch from elsewhere); `/me/insights`: my
/// resting heart rate per night with its trends, and my weekly training load.
struct MeWorkoutPages {
    let site: PortalSite
    let workouts: WorkoutService
    let insights: InsightService

    func addRoutes(to group: some RouterMethods<AppRequestContext>) {
        group.get("workouts", use: workoutsPage)
        group.get("workouts/{workoutId}", use: workoutPage)
        group.get("insights", use: insightsPage)
    }

    /// `GET /me/insights`: the last 90 days.
    @Sendable func insightsPage(_ request: Request, context: AppRequestContext) async throws -> Response {
        let to = Date(), from = to.addingTimeInterval(-90 * 86_400)
        let found = try await insights.insights(of: try context.signedInIndividual(), from: from, to: to)
        func one(_ value: Double?) -> String { value.map { $0.formatted(.number.precision(.fractionLength(0...1))) } ?? "—" }
        let bars = found.restingHeartRate.suffix(30).map { AggregateChart.Bar(label: String($0.day.suffix(5)), value: $0.bpm) }
        return try await site.page(
            "me-insights", title: "My heart and training", context,
            values: [
                "maximum": one(found.maximum.bpm), "measured": found.maximum.source == .measured,
                "chart": bars.contains { $0.value != nil } ? AggregateChart.svg(bars, title: "Resting heart rate, last 30 nights", unit: "bpm") : "",
                "days": found.restingHeartRate.reversed().map { ["day": $0.day, "bpm": one($0.bpm)] },
                "trends": found.trends.map {
                    [
                        "days": $0.days, "withValue": $0.daysWithValue, "mean": one($0.mean),
                        "slope": $0.slopePerWeek.map { String(format: "%+.2f", $0) } ?? "—",
                    ]
                },
                "weeks": found.weeklyLoad.reversed().map { week -> [String: Any] in
                    [
                        "week": week.week, "workouts": week.workouts, "zones": week.zoneSeconds.map { one($0 / 60) },
                        "svg": WorkoutFigures.zonesSVG(week.zoneSeconds),
                    ]
                },
                "hasWeeks": !found.weeklyLoad.isEmpty,
            ])
    }

    /// `GET /me/workouts`: the individual's workouts, newest first.
    @Sendable func workoutsPage(_ request: Request, context: AppRequestContext) async throws -> Response {
        let list = try await workouts.list(of: try context.signedInIndividual(), limit: 200, before: nil)
        return try await site.page(
            "me-workouts", title: "My workouts", context,
            values: [
                "workouts": list.map(Self.shown), "hasWorkouts": !list.isEmpty,
            ])
    }

    /// `GET /me/workouts/{workoutId}`: one workout with its route drawn and its heart-rate curve.
    @Sendable func workoutPage(_ request: Request, context: AppRequestContext) async throws -> Response {
        guard let id = context.parameters.get("workoutId", as: UUID.self),
            let detail = try await workouts.detail(id, of: try context.signedInIndividual())
        else { throw Problem.notFound("workout") }
        var values = Self.shown(detail.workout)
        let route = WorkoutFigures.routeSVG(detail.route.map { ($0.latitude, $0.longitude) })
        let insight = try await insights.workout(id, of: try context.signedInIndividual())
        let startMs = Double(detail.workout.start.epochMilliseconds)
        let heartRate = WorkoutFigures.heartRateSVG(
            detail.heartRate.map { ($0.start.timeIntervalSince(detail.workout.start), $0.value) },
            profiles: insight.analysis.profiles.map { ((Double($0.startMs) - startMs) / 1000, (Double($0.endMs) - startMs) / 1000) })
        func one(_ value: Double?) -> String { value.map { $0.formatted(.number.precision(.fractionLength(0...1))) } ?? "—" }
        let analysis = insight.analysis
        values["zones"] = WorkoutFigures.zonesSVG(analysis.zones.seconds)
        values["zoneRows"] = analysis.zones.seconds.enumerated().map { index, seconds -> [String: Any] in
            let bounds = [0] + HeartRateZones.bounds
            return [
                "zone": index + 1, "from": one(bounds[index] * analysis.maximumHeartRate.bpm), "minutes": one(seconds / 60),
                "colour": WorkoutFigures.zoneColours[index],
            ]
        }
        values["unmeasured"] = one(analysis.zones.unmeasuredSeconds / 60)
        values["maximum"] = one(analysis.maximumHeartRate.bpm)
        values["measuredMaximum"] = analysis.maximumHeartRate.source == .measured
        // A pace from a device's distance can be anything: shown only when it is a pace at all.
        values["pace"] =
            analysis.paceSecondsPerKilometre.flatMap { pace in
                Int(exactly: pace.rounded()).flatMap { (60..<36_000).contains($0) ? String(format: "%d:%02d /km", $0 / 60, $0 % 60) : nil }
            } ?? "—"
        values["elevation"] = analysis.elevationGainMetres.map { one($0) + " m" } ?? "—"
        values["profiles"] = analysis.profiles.map { profile -> [String: Any] in
            [
                "at": one((Double(profile.startMs) - startMs) / 60_000), "from": one(profile.startBpm), "to": one(profile.endBpm),
                "seconds": one(Double(profile.endMs - profile.startMs) / 1000), "rise": one(profile.risePercent),
                "slope": String(format: "%.2f", profile.slope), "recovery": one(profile.recoveryBpm),
            ]
        }
        values["hasProfiles"] = !analysis.profiles.isEmpty
        values["comparison"] = ([(insight.workout, analysis)] + insight.earlier).map { item -> [String: Any] in
            [
                "start": PortalPages.shown(item.0.start), "profiles": item.1.profiles.count,
                "slope": item.1.averageProfileSlope.map { String(format: "%.2f", $0) } ?? "—", "recovery": one(item.1.averageRecovery),
                "current": item.0.id == insight.workout.id,
            ]
        }
        values["hasEarlier"] = !insight.earlier.isEmpty
        values["route"] = route
        values["hasRoute"] = !route.isEmpty
        values["heartRate"] = heartRate
        values["hasHeartRate"] = !heartRate.isEmpty
        values["routePoints"] = detail.route.count.formatted()
        values["heartRatePoints"] = detail.heartRate.count.formatted()
        values["truncated"] = detail.truncated
        return try await site.page("me-workout", title: "\(values["activityName"] ?? "Workout"), \(values["start"] ?? "")", context, values: values)
    }

    /// A workout's figures as pages show them.
    static func shown(_ workout: Workout) -> [String: Any] {
        let seconds = max(0, Int(exactly: workout.end.timeIntervalSince(workout.start).rounded(.down)) ?? 0)
        let duration = String(format: "%d:%02d:%02d", seconds / 3600, seconds % 3600 / 60, seconds % 60)
        return [
            "id": workout.id.wireString, "start": PortalPages.shown(workout.start), "duration": duration,
            "activityName": activityName(workout.activity),
            "distance": workout.distanceMetres.map { ($0 / 1000).formatted(.number.precision(.fractionLength(2))) + " km" } ?? "—",
            "energy": workout.energyKilocalories.map { $0.formatted(.number.precision(.fractionLength(0))) + " kcal" } ?? "—",
            "averageHeartRate": workout.averageHeartRate.map { $0.formatted(.number.precision(.fractionLength(0))) + " bpm" } ?? "—",
            "maximumHeartRate": workout.maximumHeartRate.map { $0.formatted(.number.precision(.fractionLength(0))) + " bpm" } ?? "—",
            "source": workout.source ?? "—",
        ]
    }

    /// `traditionalStrengthTraining` → "Traditional strength training".
    static func activityName(_ activity: String) -> String {
        var words = ""
        for character in activity {
            if character.isUppercase { words += " " + character.lowercased() } else { words.append(character) }
        }
        return words.prefix(1).uppercased() + words.dropFirst()
    }
}
