import Foundation

/// A released aggregate answer that counted the individual: when, for whom, the question (its
/// statistic, type, window and filter) and the ε it spent. Never a figure about them.
package struct IncludedAnswer: Sendable, Equatable {
    package var queryPublicId: UUID
    package var answeredAt: Date
    package var organisationPublicId: UUID
    package var organisationName: String
    /// The question as stored (canonical JSON of the spec).
    package var spec: String
    package var epsilonHundredths: Int

    package init(queryPublicId: UUID, answeredAt: Date, organisationPublicId: UUID, organisationName: String, spec: String, epsilonHundredths: Int) {
        self.queryPublicId = queryPublicId
        self.answeredAt = answeredAt
        self.organisationPublicId = organisationPublicId
        self.organisationName = organisationName
        self.spec = spec
        self.epsilonHundredths = epsilonHundredths
    }
}
