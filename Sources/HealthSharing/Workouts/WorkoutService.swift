import Data4HelpCore
import DatabaseLink
import Foundation

/// One workout with what was measured during it: the individual's location fixes in its window
/// (its route) and heart-rate samples, read from their history rather than copied, so a late
/// upload for the same minutes shows.
package struct WorkoutDetail: Sendable {
    package let workout: Workout
    package let route: [StoredLocationFix]
    package let heartRate: [StoredSample]
    /// Whether the route or the heart rate was longer than `WorkoutService.maximumPoints` and cut there.
    package let truncated: Bool
}

/// An individual's workouts (imported from Apple Health, FIT, TCX and GPX files): listed newest
/// first, one with its route and heart rate.
package struct WorkoutService: Sendable {
    /// Points of a route or a heart-rate curve given at once: 5.5 hours at one a second.
    package static let maximumPoints = 20_000

    let store: WorkoutStore
    let ownData: OwnDataReader
    let runPositions: RunPositionStore

    package init(database: Database) {
        store = WorkoutStore(database: database)
        ownData = OwnDataReader(database: database)
        runPositions = RunPositionStore(database: database)
    }

    /// `limit` workouts, latest start first, after the one whose `sequence` is `before`.
    package func list(of individual: IndividualID, limit: Int, before: Int64?) async throws -> [Workout] {
        try await store.list(individualId: individual.rowId, limit: limit, beforeId: before)
    }

    /// The workout with its route and heart rate; nil if the caller has no such workout.
    package func detail(_ publicId: UUID, of individual: IndividualID) async throws -> WorkoutDetail? {
        guard let workout = try await store.find(publicId, individualId: individual.rowId) else { return nil }
        // The window includes the last second: a fix at the end time belongs to the workout.
        let end = workout.end.addingTimeInterval(0.001)
        let route: [StoredLocationFix]
        let routeCut: Bool
        if let runId = workout.runId {
            // A Track4Run finish: the route is the run's own positions.
            let positions = try await runPositions.route(runPublicId: runId, individualId: individual.rowId, limit: Self.maximumPoints + 1)
            route = positions.prefix(Self.maximumPoints).map(StoredLocationFix.init(runPosition:))
            routeCut = positions.count > Self.maximumPoints
        } else {
            let fixes = try await ownData.locations(
                of: individual, from: workout.start, to: end, order: .ascending, limit: Self.maximumPoints, after: nil
            )
            (route, routeCut) = (fixes.items, fixes.next != nil)
        }
        let heartRate = try await ownData.samples(
            of: individual, types: [.heartRate], from: workout.start, to: end, order: .ascending, limit: Self.maximumPoints, after: nil
        )
        return WorkoutDetail(workout: workout, route: route, heartRate: heartRate.items, truncated: routeCut || heartRate.next != nil)
    }
}
