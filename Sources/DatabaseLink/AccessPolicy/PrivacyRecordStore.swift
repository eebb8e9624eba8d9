import Data4HelpCore
import Foundation
import PostgresNIO

/// The parts of an individual's privacy record that are not read elsewhere: what went to each
/// organisation, summed, and the released aggregate answers that included them.
package struct PrivacyRecordStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// Per organisation that received the individual's data: disclosures, items, first and last
    /// (index: disclosures_individual_idx).
    package func disclosureTotals(individualId: Int64) async throws -> [DisclosureTotals] {
        try await database.query(
            """
            SELECT p.public_id, p.name, count(*), sum(d.item_count)::int8, min(d.at), max(d.at),
                   array_agg(DISTINCT d.channel ORDER BY d.channel)
            FROM disclosures d JOIN third_parties p ON p.id = d.third_party_id
            WHERE d.individual_id = \(individualId)
            GROUP BY p.public_id, p.name ORDER BY max(d.at) DESC
            """
        ).map { row in
            let r = try row.decode((UUID, String, Int64, Int64, Date, Date, [String]).self)
            return DisclosureTotals(
                organisationPublicId: r.0, organisationName: r.1, disclosures: Int(r.2), items: Int(r.3), first: r.4, last: r.5, channels: r.6)
        }
    }

    /// The released answers whose population included the individual, newest first (index:
    /// aggregate_populations_members_idx, GIN).
    package func aggregateAnswers(individualId: Int64, limit: Int) async throws -> [IncludedAnswer] {
        try await database.query(
            """
            SELECT q.public_id, q.answered_at, p.public_id, p.name, q.spec::text, q.epsilon_hundredths
            FROM aggregate_populations a JOIN aggregate_queries q ON q.id = a.query_id JOIN third_parties p ON p.id = q.third_party_id
            WHERE a.members @> ARRAY[\(individualId)]::int8[] AND q.status = 'answered'
            ORDER BY a.query_id DESC LIMIT \(limit)
            """
        ).map { row in
            let r = try row.decode((UUID, Date?, UUID, String, String, Int32).self)
            return IncludedAnswer(
                queryPublicId: r.0, answeredAt: r.1 ?? Date(timeIntervalSince1970: 0), organisationPublicId: r.2, organisationName: r.3,
                spec: r.4, epsilonHundredths: Int(r.5))
        }
    }
}
