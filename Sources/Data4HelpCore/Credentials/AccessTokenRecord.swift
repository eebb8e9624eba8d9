import Foundation

/// A login token as listed to its owner (never the token itself).
package struct AccessTokenRecord: Sendable, Equatable {
    package var id: Int64
    package var publicId: UUID
    package var createdAt: Date
    package var expiresAt: Date
    package var lastUsedAt: Date?

    package init(id: Int64, publicId: UUID, createdAt: Date, expiresAt: Date, lastUsedAt: Date?) {
        self.id = id
        self.publicId = publicId
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.lastUsedAt = lastUsedAt
    }
}
