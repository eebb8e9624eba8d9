import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// `/me/workouts`: my workouts, latest first, and one with its figures, its route drawn and its
/// heart-rate curve (both as SVG drawn here: no map tiles to fetch from elsewhere).
struct MeWorkoutPages {
    let site: PortalSite
    let workouts: WorkoutService

    func addRoutes(to group: some RouterMethods<AppRequestContext>) {
        group.get("workouts", use: workoutsPage)
        group.get("workouts/{workoutId}", use: workoutPage)
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
        let heartRate = WorkoutFigures.heartRateSVG(detail.heartRate.map { ($0.start.timeIntervalSince(detail.workout.start), $0.value) })
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
