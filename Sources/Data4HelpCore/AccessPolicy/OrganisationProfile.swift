import Foundation

/// What an organisation publishes about itself: shown beside its requests and offers, and in the
/// directory when `listed`.
package struct OrganisationProfile: Sendable, Equatable {
    package var organisationPublicId: UUID
    package var name: String
    package var listed: Bool
    package var purpose: String
    package var privacyContact: String
    package var website: String?
    package var updatedAt: Date

    package init(organisationPublicId: UUID, name: String, listed: Bool, purpose: String, privacyContact: String, website: String?, updatedAt: Date) {
        self.organisationPublicId = organisationPublicId
        self.name = name
        self.listed = listed
        self.purpose = purpose
        self.privacyContact = privacyContact
        self.website = website
        self.updatedAt = updatedAt
    }
}
