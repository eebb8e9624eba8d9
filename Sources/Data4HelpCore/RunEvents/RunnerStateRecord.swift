import Foundation

/// A runner's live state, kept on their enrolment row.
package struct RunnerStateRecord: Sendable, Equatable {
    package var runnerId: UUID
    package var displayName: String
    package var lastFixAt: Date?
    package var latitude: Double?
    package var longitude: Double?
    package var distanceMeters: Double
    package var firstFixAt: Date?
    package var offCourse: Bool
    package var finishedAt: Date?
    package var droppedFixes: Int

    package init(
        runnerId: UUID, displayName: String, lastFixAt: Date?, latitude: Double?, longitude: Double?, distanceMeters: Double,
        firstFixAt: Date?, offCourse: Bool, finishedAt: Date?, droppedFixes: Int
    ) {
        self.runnerId = runnerId
        self.displayName = displayName
        self.lastFixAt = lastFixAt
        self.latitude = latitude
        self.longitude = longitude
        self.distanceMeters = distanceMeters
        self.firstFixAt = firstFixAt
        self.offCourse = offCourse
        self.finishedAt = finishedAt
        self.droppedFixes = droppedFixes
    }
}
