import Foundation

/// One disclosure as the individual's access log shows it.
package struct DisclosureRecord: Sendable, Equatable {
    package var id: Int64
    package var at: Date
    package var organisationPublicId: UUID
    package var organisationName: String
    package var requestPublicId: UUID
    package var channel: String
    package var types: [String]
    package var itemCount: Int

    package init(
        id: Int64, at: Date, organisationPublicId: UUID, organisationName: String, requestPublicId: UUID, channel: String, types: [String],
        itemCount: Int
    ) {
        self.id = id
        self.at = at
        self.organisationPublicId = organisationPublicId
        self.organisationName = organisationName
        self.requestPublicId = requestPublicId
        self.channel = channel
        self.types = types
        self.itemCount = itemCount
    }
}
