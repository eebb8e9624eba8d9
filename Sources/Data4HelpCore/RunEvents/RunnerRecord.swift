import Foundation

/// A participant as spectators see them.
package struct RunnerRecord: Sendable, Equatable {
    package var runnerId: UUID
    package var displayName: String
    package var enrolledAt: Date

    package init(runnerId: UUID, displayName: String, enrolledAt: Date) {
        self.runnerId = runnerId
        self.displayName = displayName
        self.enrolledAt = enrolledAt
    }
}
