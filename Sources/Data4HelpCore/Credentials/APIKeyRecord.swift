import Foundation

/// An API key as listed to its tenant (never the secret).
package struct APIKeyRecord: Sendable, Equatable {
    package var id: Int64
    package var publicId: UUID
    package var name: String
    package var prefix: String
    package var createdAt: Date
    package var lastUsedAt: Date?
    package var revokedAt: Date?

    package init(id: Int64, publicId: UUID, name: String, prefix: String, createdAt: Date, lastUsedAt: Date?, revokedAt: Date?) {
        self.id = id
        self.publicId = publicId
        self.name = name
        self.prefix = prefix
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.revokedAt = revokedAt
    }
}
