import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation

/// Organisations' public profiles (purpose, privacy contact, website), shown beside their
/// requests and offers, and the directory of those that opt in to be listed — where a person
/// finds an organisation to offer data to.
package struct OrganisationDirectory: Sendable {
    let store: OrganisationProfileStore

    /// Organisations shown per directory answer.
    package static let pageSize = 50

    package init(database: Database) {
        store = OrganisationProfileStore(database: database)
    }

    /// The organisation's own profile; nil until it published one.
    package func profile(of party: ThirdPartyID) async throws -> OrganisationProfile? {
        try await store.profile(thirdPartyId: party.rowId)
    }

    package func publish(_ profile: PublishedProfile, by party: ThirdPartyID) async throws -> OrganisationProfile {
        try await store.save(
            thirdPartyId: party.rowId, listed: profile.listed, purpose: profile.purpose.value, privacyContact: profile.privacyContact.value,
            website: profile.website?.value)
    }

    /// Withdraws the profile; false when there was none.
    package func withdraw(by party: ThirdPartyID) async throws -> Bool {
        try await store.remove(thirdPartyId: party.rowId)
    }

    /// Listed organisations whose name contains `search`, in name order.
    package func listed(matching search: String?) async throws -> [OrganisationProfile] {
        try await store.directory(search: search, limit: Self.pageSize)
    }

    /// A listed organisation.
    package func listed(_ organisation: UUID) async throws -> OrganisationProfile? {
        try await store.listed(publicId: organisation)
    }
}

/// A profile as an organisation publishes it, validated.
package struct PublishedProfile: Sendable {
    package var listed: Bool
    package var purpose: AccessPurpose
    package var privacyContact: EmailAddress
    package var website: WebsiteAddress?

    package init(listed: Bool, purpose: AccessPurpose, privacyContact: EmailAddress, website: WebsiteAddress?) {
        self.listed = listed
        self.purpose = purpose
        self.privacyContact = privacyContact
        self.website = website
    }
}
