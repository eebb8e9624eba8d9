import Foundation
import PostgresNIO

/// One outbox event of a subscribed grant: new items of an upload, by reference.
package struct DataEventRecord: Sendable, Equatable {
    package var id: Int64
    package var requestId: Int64
    package var requestPublicId: UUID
    package var thirdPartyId: Int64
    package var individualId: Int64
    package var firstMs: Int64
    package var lastMs: Int64
    package var kinds: [String]
    package var keys: [Int64]
}

/// `data_events`, read in order by the party they are for.
package struct DataEventStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// The party's events after `afterId`, oldest first, of grants that are still active: a
    /// revoked or expired grant's undelivered events deliver nothing (index: data_events_third_party_idx).
    package func events(thirdPartyId: Int64, afterId: Int64, limit: Int) async throws -> [DataEventRecord] {
        let rows = try await database.query("""
            SELECT e.id, e.request_id, r.public_id, e.third_party_id, e.individual_id, e.first_ms, e.last_ms, e.kinds, e.keys
            FROM data_events e JOIN access_requests r ON r.id = e.request_id
            WHERE e.third_party_id = \(thirdPartyId) AND e.id > \(afterId)
              AND r.status = 'granted' AND (r.granted_until IS NULL OR r.granted_until > now())
            ORDER BY e.id LIMIT \(limit)
            """)
        return try rows.map { row in
            let r = try row.decode((Int64, Int64, UUID, Int64, Int64, Int64, Int64, [String], [Int64]).self)
            return DataEventRecord(
                id: r.0, requestId: r.1, requestPublicId: r.2, thirdPartyId: r.3, individualId: r.4,
                firstMs: r.5, lastMs: r.6, kinds: r.7, keys: r.8
            )
        }
    }
}

extension HealthDataReader {
    /// The samples an event refers to: of these types, starting in `[firstMs, lastMs]`, with these keys.
    package func samples(individualId: Int64, types: [Int16], firstMs: Int64, lastMs: Int64, keys: [Int64]) async throws -> [SampleRow] {
        let rows = try await database.query("""
            SELECT b.sample_type, (extract(epoch FROM b.block_start) * 1000)::int8 + u.offset_ms AS start_ms,
                   u.val, u.duration_ms, u.key, s.name
            FROM sample_blocks b
            CROSS JOIN LATERAL unnest(b.offsets_ms, b.vals, b.durations_ms, b.keys, b.source_ids)
                AS u(offset_ms, val, duration_ms, key, source_id)
            LEFT JOIN sample_sources s ON s.individual_id = b.individual_id AND s.source_id = u.source_id
            WHERE b.individual_id = \(individualId) AND b.sample_type = ANY (\(types)::int2[])
              AND b.block_start >= 'epoch'::timestamptz + \(firstMs - firstMs % 60_000) * interval '1 millisecond'
              AND b.block_start <= 'epoch'::timestamptz + \(lastMs) * interval '1 millisecond'
              AND u.key = ANY (\(keys)::int8[])
            ORDER BY start_ms, b.sample_type, u.key
            """)
        return try rows.map { row in
            let (type, startMs, value, duration, key, source) = try row.decode((Int16, Int64, Float, Int32?, Int64, String?).self)
            return SampleRow(type: type, startMs: startMs, value: value, durationMs: duration, key: key, source: source)
        }
    }

    /// The location fixes an event refers to.
    package func locations(individualId: Int64, firstMs: Int64, lastMs: Int64, keys: [Int64]) async throws -> [LocationRow] {
        let rows = try await database.query("""
            SELECT (extract(epoch FROM recorded_at) * 1000)::int8, dedupe_key, latitude, longitude, accuracy, altitude
            FROM location_fixes
            WHERE individual_id = \(individualId)
              AND recorded_at >= 'epoch'::timestamptz + \(firstMs) * interval '1 millisecond'
              AND recorded_at <= 'epoch'::timestamptz + \(lastMs) * interval '1 millisecond'
              AND dedupe_key = ANY (\(keys)::int8[])
            ORDER BY recorded_at, dedupe_key
            """)
        return try rows.map { row in
            let (timeMs, key, latitude, longitude, accuracy, altitude) = try row.decode((Int64, Int64, Double, Double, Float?, Float?).self)
            return LocationRow(timeMs: timeMs, key: key, latitude: latitude, longitude: longitude, accuracy: accuracy, altitude: altitude)
        }
    }
}
