import Data4HelpCore
import Foundation
import PostgresNIO

/// `disclosures`: the append-only access log.
package struct DisclosureStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// Records that items of these types went to the party under the request.
    package func record(individualId: Int64, thirdPartyId: Int64, requestId: Int64, channel: String, types: [String], itemCount: Int) async throws {
        try await database.query(
            """
            INSERT INTO disclosures (individual_id, third_party_id, request_id, channel, types, item_count)
            VALUES (\(individualId), \(thirdPartyId), \(requestId), \(channel), \(types)::text[], \(itemCount))
            """)
    }

    /// The individual's disclosures, newest first (index: disclosures_individual_idx).
    package func list(individualId: Int64, beforeId: Int64?, limit: Int) async throws -> [DisclosureRecord] {
        let rows = try await database.query(
            """
            SELECT d.id, d.at, p.public_id, p.name, r.public_id, d.channel, d.types, d.item_count
            FROM disclosures d
            JOIN third_parties p ON p.id = d.third_party_id
            JOIN access_requests r ON r.id = d.request_id
            WHERE d.individual_id = \(individualId) AND d.id < \(beforeId ?? Int64.max)
            ORDER BY d.id DESC LIMIT \(limit)
            """)
        return try rows.map { row in
            let r = try row.decode((Int64, Date, UUID, String, UUID, String, [String], Int32).self)
            return DisclosureRecord(
                id: r.0, at: r.1, organisationPublicId: r.2, organisationName: r.3, requestPublicId: r.4,
                channel: r.5, types: r.6, itemCount: Int(r.7)
            )
        }
    }
}
