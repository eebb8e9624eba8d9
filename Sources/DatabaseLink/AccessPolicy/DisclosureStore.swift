import Data4HelpCore
import Foundation
import PostgresNIO

/// One entry of the access log, to be written with something else (a webhook attempt's outcome:
/// `WebhookStore.finish`).
package struct NewDisclosure: Sendable, Equatable {
    package var individualId: Int64
    package var thirdPartyId: Int64
    package var requestId: Int64
    package var channel: String
    package var types: [String]
    package var itemCount: Int

    package init(individualId: Int64, thirdPartyId: Int64, requestId: Int64, channel: String, types: [String], itemCount: Int) {
        self.individualId = individualId
        self.thirdPartyId = thirdPartyId
        self.requestId = requestId
        self.channel = channel
        self.types = types
        self.itemCount = itemCount
    }
}

/// `disclosures`: the append-only access log.
package struct DisclosureStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// Records that items of these types went to the party under the request.
    package func record(individualId: Int64, thirdPartyId: Int64, requestId: Int64, channel: String, types: [String], itemCount: Int) async throws {
        try await record(
            NewDisclosure(
                individualId: individualId, thirdPartyId: thirdPartyId, requestId: requestId, channel: channel, types: types, itemCount: itemCount))
    }

    package func record(_ entry: NewDisclosure) async throws {
        try await database.query(
            """
            INSERT INTO disclosures (individual_id, third_party_id, request_id, channel, types, item_count)
            VALUES (\(entry.individualId), \(entry.thirdPartyId), \(entry.requestId), \(entry.channel), \(entry.types)::text[], \(entry.itemCount))
            """)
    }

    /// The individual's disclosures, newest first (index: disclosures_individual_idx): to
    /// organisations under their requests, and to carers under care links.
    package func list(individualId: Int64, beforeId: Int64?, limit: Int) async throws -> [DisclosureRecord] {
        let rows = try await database.query(
            """
            SELECT d.id, d.at, p.public_id, p.name, r.public_id, l.public_id, c.full_name, d.channel, d.types, d.item_count,
                   s.public_id, s.label
            FROM disclosures d
            LEFT JOIN share_links s ON s.id = d.share_link_id
            LEFT JOIN third_parties p ON p.id = d.third_party_id
            LEFT JOIN access_requests r ON r.id = d.request_id
            LEFT JOIN care_links l ON l.id = d.care_link_id
            LEFT JOIN individuals c ON c.id = l.carer_id
            WHERE d.individual_id = \(individualId) AND d.id < \(beforeId ?? Int64.max)
            ORDER BY d.id DESC LIMIT \(limit)
            """)
        return try rows.map { row in
            let r = try row.decode((Int64, Date, UUID?, String?, UUID?, UUID?, String?, String, [String], Int32, UUID?, String?).self)
            let recipient: DisclosureRecipient
            switch (r.2, r.3, r.4, r.5, r.10) {
            case (let organisation?, let name?, let request?, nil, nil):
                recipient = .organisation(publicId: organisation, name: name, requestPublicId: request)
            case (nil, nil, nil, let link?, nil): recipient = .carer(linkPublicId: link, name: r.6)
            case (nil, nil, nil, nil, let link?): recipient = .shareLink(linkPublicId: link, label: r.11 ?? "")
            default: throw StoredValueError(column: "disclosures.care_link_id")
            }
            return DisclosureRecord(id: r.0, at: r.1, recipient: recipient, channel: r.7, types: r.8, itemCount: Int(r.9))
        }
    }
}
