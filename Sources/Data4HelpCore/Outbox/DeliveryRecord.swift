import Foundation

/// How an attempt ended, as the delivery log shows it.
package struct DeliveryAttemptRecord: Sendable, Equatable {
    package var attempt: Int
    package var at: Date
    package var durationMs: Int
    package var statusCode: Int?
    package var error: String?

    package init(attempt: Int, at: Date, durationMs: Int, statusCode: Int?, error: String?) {
        self.attempt = attempt
        self.at = at
        self.durationMs = durationMs
        self.statusCode = statusCode
        self.error = error
    }
}

/// One delivery in an endpoint's log.
package struct DeliveryRecord: Sendable, Equatable {
    package var id: Int64
    package var publicId: UUID
    package var eventType: String
    package var requestPublicId: UUID?
    package var state: String
    package var createdAt: Date
    package var nextAttemptAt: Date?
    package var finishedAt: Date?
    package var attempts: [DeliveryAttemptRecord]

    package init(
        id: Int64, publicId: UUID, eventType: String, requestPublicId: UUID?, state: String, createdAt: Date, nextAttemptAt: Date?, finishedAt: Date?,
        attempts: [DeliveryAttemptRecord]
    ) {
        self.id = id
        self.publicId = publicId
        self.eventType = eventType
        self.requestPublicId = requestPublicId
        self.state = state
        self.createdAt = createdAt
        self.nextAttemptAt = nextAttemptAt
        self.finishedAt = finishedAt
        self.attempts = attempts
    }
}
