import Foundation

/// A third-party organisation's account as stored (without the password hash).
package struct ThirdPartyRecord: Sendable, Equatable {
    package var id: Int64
    package var publicId: UUID
    package var name: String
    package var email: String
    package var createdAt: Date

    package init(id: Int64, publicId: UUID, name: String, email: String, createdAt: Date) {
        self.id = id
        self.publicId = publicId
        self.name = name
        self.email = email
        self.createdAt = createdAt
    }
}
