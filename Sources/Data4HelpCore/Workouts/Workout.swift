import Foundation

/// A workout as its owner reads it — the device's totals for one activity — and as every tier
/// names it: the row of `workouts`, read by HealthSharing's `WorkoutService`, shown by the HTTP layer.
package struct Workout: Sendable, Equatable {
    /// Its place in the listing order, for cursors (never shown).
    package let sequence: Int64
    package let id: UUID
    package let activity: String
    package let start: Date
    package let end: Date
    package let distanceMetres: Double?
    package let energyKilocalories: Double?
    package let averageHeartRate: Double?
    package let maximumHeartRate: Double?
    /// The device or app that recorded it.
    package let source: String?
    /// The import that brought it, if one did.
    package let importId: UUID?
    /// The Track4Run event it was run in, if it was (its route is the run's positions).
    package let runId: UUID?

    package init(
        sequence: Int64, id: UUID, activity: String, start: Date, end: Date, distanceMetres: Double?, energyKilocalories: Double?,
        averageHeartRate: Double?, maximumHeartRate: Double?, source: String?, importId: UUID?, runId: UUID? = nil
    ) {
        self.sequence = sequence
        self.id = id
        self.activity = activity
        self.start = start
        self.end = end
        self.distanceMetres = distanceMetres
        self.energyKilocalories = energyKilocalories
        self.averageHeartRate = averageHeartRate
        self.maximumHeartRate = maximumHeartRate
        self.source = source
        self.importId = importId
        self.runId = runId
    }
}
