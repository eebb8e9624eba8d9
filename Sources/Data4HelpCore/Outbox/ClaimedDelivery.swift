import Foundation

/// A delivery an instance has claimed: everything needed to send one attempt.
package struct ClaimedDelivery: Sendable {
    package var id: Int64
    package var publicId: UUID
    /// This attempt's number among all attempts of the delivery (1-based).
    package var attempt: Int
    /// This attempt's number since the delivery was created or last redelivered (1-based).
    package var roundAttempt: Int
    package var eventType: String
    package var createdAt: Date
    /// The party event to read the body from, or the body itself.
    package var eventId: Int64?
    package var payload: String?
    package var url: String
    package var secret: String

    package init(
        id: Int64, publicId: UUID, attempt: Int, roundAttempt: Int, eventType: String, createdAt: Date, eventId: Int64?, payload: String?,
        url: String, secret: String
    ) {
        self.id = id
        self.publicId = publicId
        self.attempt = attempt
        self.roundAttempt = roundAttempt
        self.eventType = eventType
        self.createdAt = createdAt
        self.eventId = eventId
        self.payload = payload
        self.url = url
        self.secret = secret
    }
}
