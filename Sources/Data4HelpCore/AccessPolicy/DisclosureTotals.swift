import Foundation

/// What one organisation received of an individual's data, summed.
package struct DisclosureTotals: Sendable, Equatable {
    package var organisationPublicId: UUID
    package var organisationName: String
    package var disclosures: Int
    package var items: Int
    package var first: Date
    package var last: Date
    package var channels: [String]

    package init(organisationPublicId: UUID, organisationName: String, disclosures: Int, items: Int, first: Date, last: Date, channels: [String]) {
        self.organisationPublicId = organisationPublicId
        self.organisationName = organisationName
        self.disclosures = disclosures
        self.items = items
        self.first = first
        self.last = last
        self.channels = channels
    }
}
