import Foundation

/// A party's subscription to an approved aggregate query.
package struct AggregateSubscriptionRecord: Sendable {
    package var id: Int64
    package var publicId: UUID
    package var thirdPartyId: Int64
    package var queryId: Int64
    package var queryPublicId: UUID
    /// The approved query's normalised spec.
    package var spec: String
    package var lastQueryPublicId: UUID?
    package var createdAt: Date
    package var nextRunAt: Date
    package var runs: Int
    package var period: String
    package var status: AggregateSubscriptionStatus
    package var stoppedReason: String?

    package init(
        id: Int64, publicId: UUID, thirdPartyId: Int64, queryId: Int64, queryPublicId: UUID, spec: String, lastQueryPublicId: UUID?, createdAt: Date,
        nextRunAt: Date, runs: Int, period: String, status: AggregateSubscriptionStatus, stoppedReason: String?
    ) {
        self.id = id
        self.publicId = publicId
        self.thirdPartyId = thirdPartyId
        self.queryId = queryId
        self.queryPublicId = queryPublicId
        self.spec = spec
        self.lastQueryPublicId = lastQueryPublicId
        self.createdAt = createdAt
        self.nextRunAt = nextRunAt
        self.runs = runs
        self.period = period
        self.status = status
        self.stoppedReason = stoppedReason
    }
}
