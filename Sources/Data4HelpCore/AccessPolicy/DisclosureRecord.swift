import Foundation

/// Who was shown the data of a disclosure.
package enum DisclosureRecipient: Sendable, Equatable {
    /// An organisation, under one of its requests.
    case organisation(publicId: UUID, name: String, requestPublicId: UUID)
    /// A carer, under a care link.
    case carer(linkPublicId: UUID, name: String?)
    /// Whoever opened a share link (no account: the link's label names them as its owner did).
    case shareLink(linkPublicId: UUID, label: String)
}

/// One disclosure as the individual's access log shows it.
package struct DisclosureRecord: Sendable, Equatable {
    package var id: Int64
    package var at: Date
    package var recipient: DisclosureRecipient
    package var channel: String
    package var types: [String]
    package var itemCount: Int

    package init(id: Int64, at: Date, recipient: DisclosureRecipient, channel: String, types: [String], itemCount: Int) {
        self.id = id
        self.at = at
        self.recipient = recipient
        self.channel = channel
        self.types = types
        self.itemCount = itemCount
    }
}
