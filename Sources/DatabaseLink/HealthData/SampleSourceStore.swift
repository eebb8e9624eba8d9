import Data4HelpCore
import Foundation
import PostgresNIO

/// `sample_sources`: an individual's devices and the order in which they are preferred.
package struct SampleSourceStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// The individual's sources, most preferred first.
    package func sources(individualId: Int64) async throws -> [SampleSource] {
        try await database.query(Self.listing(individualId)).map(Self.source)
    }

    /// Makes `order` the individual's preference (first most preferred); sources left out go back
    /// to their default places after them. Counts again every day on which several sources have
    /// samples, in the same transaction and under the individual's ingest lock, so that no
    /// upload counts a day by the old order half-way. Changes nothing and answers the position of
    /// the first id in `order` that is not one of the individual's sources, if one is not. The
    /// ids in `order` are distinct (the caller checks).
    package func setOrder(_ order: [Int16], individualId: Int64) async throws -> Result<[SampleSource], UnknownSource> {
        try await database.withTransaction { connection in
            _ = try await connection.query(
                "SELECT pg_advisory_xact_lock(hashtextextended('data4help.ingest', \(individualId)))", logger: database.logger)
            let known = try await connection.query(
                "SELECT source_id FROM sample_sources WHERE individual_id = \(individualId)", logger: database.logger)
            var ids = Set<Int16>()
            for try await id in known.decode(Int16.self) { ids.insert(id) }
            if let position = order.firstIndex(where: { !ids.contains($0) }) { return .failure(UnknownSource(position: position)) }
            let positions = order.indices.map { Int16(clamping: $0 + 1) }
            _ = try await connection.query(
                """
                UPDATE sample_sources s SET
                    priority = COALESCE(o.position, data4help_default_source_priority(s.name)),
                    ordered_by_individual = o.position IS NOT NULL
                FROM sample_sources t
                LEFT JOIN unnest(\(order)::int2[], \(positions)::int2[]) AS o(id, position) ON o.id = t.source_id
                WHERE s.individual_id = \(individualId) AND t.individual_id = s.individual_id AND t.source_id = s.source_id
                """, logger: database.logger)
            _ = try await connection.query("SELECT data4help_recount_multi_source_days(\(individualId))", logger: database.logger)
            var sources: [SampleSource] = []
            for try await row in try await connection.query(Self.listing(individualId), logger: database.logger) {
                sources.append(try Self.source(row))
            }
            return .success(sources)
        }
    }

    /// The position in a requested order of an id that is not one of the individual's sources.
    package struct UnknownSource: Error, Sendable, Equatable {
        package var position: Int
    }

    private static func listing(_ individualId: Int64) -> PostgresQuery {
        """
        SELECT source_id, name, priority, ordered_by_individual FROM sample_sources
        WHERE individual_id = \(individualId) ORDER BY priority, source_id
        """
    }

    private static func source(_ row: PostgresRow) throws -> SampleSource {
        let (id, name, priority, ordered) = try row.decode((Int16, String, Int16, Bool).self)
        return SampleSource(id: id, name: name, priority: priority, orderedByIndividual: ordered)
    }
}
