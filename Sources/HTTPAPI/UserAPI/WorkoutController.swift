import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// `/api/users/workouts`: the caller's workouts (from their imports), newest first, and one with
/// its route (GeoJSON) and heart rate. Another individual's workout is answered 404.
struct WorkoutController {
    let workouts: WorkoutService

    func addRoutes(to group: some RouterMethods<IndividualRequestContext>) {
        group.get("workouts", use: list)
        group.get("workouts/:workoutId", use: detail)
    }

    @Sendable func list(_ request: Request, context: IndividualRequestContext) async throws -> Page<WorkoutBody> {
        let pagination = try KeysetPagination(request)
        let rows = try await workouts.list(of: context.individual, limit: pagination.limit + 1, before: pagination.beforeId)
        return pagination.page(rows, id: \.sequence, item: { WorkoutBody($0, detail: nil) })
    }

    @Sendable func detail(_ request: Request, context: IndividualRequestContext) async throws -> WorkoutBody {
        guard let id = context.parameters.get("workoutId", as: UUID.self),
            let detail = try await workouts.detail(id, of: context.individual)
        else { throw Problem.notFound("workout") }
        return WorkoutBody(detail.workout, detail: detail)
    }
}

/// A workout on the wire (`Workout` in the OpenAPI document); with its route and heart rate
/// when one is asked for by id.
struct WorkoutBody: ResponseEncodable, Sendable {
    let workout: Workout
    let detail: WorkoutDetail?
    /// For a third party (`GrantedWorkout`): without the import it came with, the owner's own business.
    let forParty: Bool

    init(_ workout: Workout, detail: WorkoutDetail?, forParty: Bool = false) {
        self.workout = workout
        self.detail = detail
        self.forParty = forParty
    }

    private enum CodingKeys: String, CodingKey {
        case id, activity, start, end, durationSeconds, distanceMetres, energyKilocalories, averageHeartRate, maximumHeartRate, source, importId,
            runId
        case route, heartRate, truncated
    }

    private struct Route: Encodable {
        let type = "LineString"
        /// `[longitude, latitude]` or `[longitude, latitude, altitude]`, as GeoJSON (RFC 7946) has them.
        let coordinates: [[Double]]
        let times: [String]
    }

    private struct HeartRatePoint: Encodable {
        let time: String
        let bpm: Double
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(workout.id.wireString, forKey: .id)
        try container.encode(workout.activity, forKey: .activity)
        try container.encode(WireFormat.timestamp(workout.start), forKey: .start)
        try container.encode(WireFormat.timestamp(workout.end), forKey: .end)
        try container.encode(workout.end.timeIntervalSince(workout.start), forKey: .durationSeconds)
        try container.encode(workout.distanceMetres, forKey: .distanceMetres)
        try container.encode(workout.energyKilocalories, forKey: .energyKilocalories)
        try container.encode(workout.averageHeartRate, forKey: .averageHeartRate)
        try container.encode(workout.maximumHeartRate, forKey: .maximumHeartRate)
        try container.encode(workout.source, forKey: .source)
        if !forParty {
            try container.encode(workout.importId?.wireString, forKey: .importId)
            try container.encode(workout.runId?.wireString, forKey: .runId)
        }
        guard let detail else { return }
        // A route needs two points to be a LineString; fewer fixes give no route.
        let route =
            detail.route.count >= 2
            ? Route(
                coordinates: detail.route.map { fix in [fix.longitude, fix.latitude] + (fix.altitude.map { [$0] } ?? []) },
                times: detail.route.map { WireFormat.timestamp($0.time) }
            ) : nil
        try container.encode(route, forKey: .route)
        try container.encode(detail.heartRate.map { HeartRatePoint(time: WireFormat.timestamp($0.start), bpm: $0.value) }, forKey: .heartRate)
        try container.encode(detail.truncated, forKey: .truncated)
    }
}
