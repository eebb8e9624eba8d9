import Data4HelpCore
import DatabaseLink
import Foundation

/// Everything about where an individual's data went, in one place (PRECIOUS's privacy record):
/// per organisation, its requests and grants and what it received; the share links and their
/// openings; and the released aggregate answers that counted the person.
package struct PrivacyRecord: Sendable {
    /// One organisation the person dealt with.
    package struct Organisation: Sendable {
        package var publicId: UUID
        package var name: String
        package var profile: OrganisationProfile?
        /// Its requests naming the person and the grants they became, newest first.
        package var requests: [AccessRequest]
        /// What it received, summed (each disclosure is in the access log); nil when nothing.
        package var received: DisclosureTotals?
    }

    package var organisations: [Organisation]
    package var shareLinks: [ShareLink]
    package var aggregateAnswers: [IncludedAnswer]
}

/// Reads an individual's privacy record.
package struct PrivacyRecordService: Sendable {
    let store: PrivacyRecordStore
    let requests: AccessRequestStore
    let shareLinks: ShareLinkStore

    /// The most requests, share links and answers one record lists (newest first).
    package static let limit = 500

    package init(database: Database) {
        store = PrivacyRecordStore(database: database)
        requests = AccessRequestStore(database: database)
        shareLinks = ShareLinkStore(database: database)
    }

    package func record(of individual: IndividualID) async throws -> PrivacyRecord {
        let all = try await requests.listForIndividual(individualId: individual.rowId, status: nil, beforeId: nil, limit: Self.limit)
        let totals = try await store.disclosureTotals(individualId: individual.rowId)
        var organisations: [PrivacyRecord.Organisation] = []
        var index: [UUID: Int] = [:]
        for record in all {
            if let at = index[record.organisationPublicId] {
                organisations[at].requests.append(AccessRequest(record: record))
            } else {
                index[record.organisationPublicId] = organisations.count
                organisations.append(
                    PrivacyRecord.Organisation(
                        publicId: record.organisationPublicId, name: record.organisationName, profile: record.organisationProfile,
                        requests: [AccessRequest(record: record)], received: nil))
            }
        }
        for total in totals {
            if let at = index[total.organisationPublicId] {
                organisations[at].received = total
            } else {
                // Received under a request no longer listed (beyond the limit): still said.
                index[total.organisationPublicId] = organisations.count
                organisations.append(
                    PrivacyRecord.Organisation(
                        publicId: total.organisationPublicId, name: total.organisationName, profile: nil, requests: [], received: total))
            }
        }
        return PrivacyRecord(
            organisations: organisations,
            shareLinks: try await shareLinks.links(individualId: individual.rowId, limit: Self.limit),
            aggregateAnswers: try await store.aggregateAnswers(individualId: individual.rowId, limit: Self.limit))
    }

    /// For the export: every share link of the person's with its openings.
    package func shareLinks(of individual: IndividualID) async throws -> [(link: ShareLink, views: [ShareLinkView])] {
        try await shareLinks.linksWithViews(individualId: individual.rowId)
    }

    /// For the export: every released answer that counted the person, newest first.
    package func aggregateAnswers(of individual: IndividualID) async throws -> [IncludedAnswer] {
        try await store.aggregateAnswers(individualId: individual.rowId, limit: 1_000_000)
    }
}
