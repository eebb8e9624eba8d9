import Data4HelpCore
import Foundation
import Logging
import PostgresNIO

/// The data a `data.created` event refers to: the new items of one upload under one grant.
package struct DataReference: Sendable, Equatable {
    package var firstMs: Int64
    package var lastMs: Int64
    package var kinds: [String]
    package var keys: [Int64]
}

/// An active grant with a subscription, as an import's announcement reads it.
package struct SubscribedGrant: Sendable, Equatable {
    package var requestId: Int64
    package var thirdPartyId: Int64
    package var types: [String]
    package var fromMs: Int64?
    package var toMs: Int64?
}

/// A `data.imported` event to write: for the party of `requestId`.
package struct ImportedDataEvent: Sendable, Equatable {
    package var requestId: Int64
    package var thirdPartyId: Int64
    package var data: ImportedDataReference

    package init(requestId: Int64, thirdPartyId: Int64, data: ImportedDataReference) {
        self.requestId = requestId
        self.thirdPartyId = thirdPartyId
        self.data = data
    }
}

/// One event of a party's log (`party_events`): new data under a subscribed grant, or a change
/// of one of its requests' state.
package struct PartyEventRecord: Sendable, Equatable {
    package var id: Int64
    package var type: String
    package var createdAt: Date
    /// The request the event is about; nil for an aggregate's or an offer's event.
    package var requestId: Int64?
    package var requestPublicId: UUID?
    /// The aggregate query an `aggregate.*` event reports.
    package var aggregateId: Int64?
    package var thirdPartyId: Int64
    package var individualId: Int64?
    /// Set for `data.created` only.
    package var data: DataReference?
    /// Set for `data.imported` only.
    package var imported: ImportedDataReference?
    /// Whether the grant the event came under is still active; data of an inactive grant is never delivered.
    package var grantActive: Bool
    /// The offer an `offer.received` event announces.
    package var offerPublicId: UUID? = nil
    /// The grant as it stands now (nil for an aggregate's event or a request never granted): a
    /// data event delivers only what the grant covers when it is read or sent.
    package var grant: CurrentGrant? = nil
}

/// `party_events`, read in order by the party they are for.
package struct PartyEventStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// The party's events after `afterId`, oldest first. Data events of a grant that is no longer
    /// active are left out: a revoked or expired grant's undelivered data delivers nothing.
    /// With `dataOnly`, the state changes are left out too (index: party_events_third_party_idx).
    package func events(thirdPartyId: Int64, afterId: Int64, dataOnly: Bool = false, limit: Int) async throws -> [PartyEventRecord] {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns)
            FROM party_events e LEFT JOIN access_requests r ON r.id = e.request_id LEFT JOIN data_offers o ON o.id = e.offer_id
            WHERE e.third_party_id = \(thirdPartyId) AND e.id > \(afterId)
              AND CASE WHEN e.event_type IN ('data.created', 'data.imported') THEN \(unescaped: Self.grantActive) ELSE NOT \(dataOnly) END
            ORDER BY e.id LIMIT \(limit)
            """)
        return try rows.map(Self.record)
    }

    /// One event by id, whatever its grant's state now.
    package func event(id: Int64) async throws -> PartyEventRecord? {
        let rows = try await database.query(
            """
            SELECT \(unescaped: Self.columns)
            FROM party_events e LEFT JOIN access_requests r ON r.id = e.request_id LEFT JOIN data_offers o ON o.id = e.offer_id
            WHERE e.id = \(id)
            """)
        return try rows.first.map(Self.record)
    }

    /// The individual's active grants with a subscription (index: access_requests_subscriptions_idx).
    static func subscribedGrants(individualId: Int64, on connection: LeasedConnection, logger: Logger) async throws -> [SubscribedGrant] {
        let rows = try await connection.query(
            """
            SELECT id, third_party_id, granted_types, (extract(epoch FROM granted_from) * 1000)::int8, (extract(epoch FROM granted_to) * 1000)::int8
            FROM access_requests
            WHERE individual_id = \(individualId) AND subscribe AND access_grant_active(status, granted_until)
            """, logger: logger)
        var grants: [SubscribedGrant] = []
        for try await (id, party, types, from, to) in rows.decode((Int64, Int64, [String]?, Int64?, Int64?).self) {
            grants.append(SubscribedGrant(requestId: id, thirdPartyId: party, types: types ?? [], fromMs: from, toMs: to))
        }
        return grants
    }

    /// Writes `data.imported` events for `individualId` (deliveries follow by the table's trigger).
    static func insertImported(_ events: [ImportedDataEvent], individualId: Int64, on connection: LeasedConnection, logger: Logger) async throws {
        guard !events.isEmpty else { return }
        _ = try await connection.query(
            """
            INSERT INTO party_events (event_type, third_party_id, request_id, individual_id, first_ms, last_ms, kinds, item_count)
            SELECT 'data.imported', p, r, \(individualId), f, l, ARRAY[k], nullif(c, -1)
            FROM unnest(\(events.map(\.thirdPartyId))::int8[], \(events.map(\.requestId))::int8[], \(events.map(\.data.span.firstMs))::int8[],
                        \(events.map(\.data.span.lastMs))::int8[], \(events.map(\.data.kind))::text[], \(events.map { $0.data.count ?? -1 })::int8[])
                AS e(p, r, f, l, k, c)
            """, logger: logger)
    }

    private static let grantActive = "access_grant_active(r.status, r.granted_until)"
    private static let columns = """
        e.id, e.event_type, e.created_at, e.request_id, r.public_id, e.third_party_id, e.individual_id,
        e.first_ms, e.last_ms, e.kinds, e.keys, coalesce(\(grantActive), false), e.aggregate_id, e.item_count,
        r.granted_types, (extract(epoch FROM r.granted_from) * 1000)::int8, (extract(epoch FROM r.granted_to) * 1000)::int8, r.subscribe,
        r.granted_until, o.public_id
        """

    private static func record(_ row: PostgresRow) throws -> PartyEventRecord {
        let r = try row.decode(
            (
                Int64, String, Date, Int64?, UUID?, Int64, Int64?, Int64?, Int64?, [String]?, [Int64]?, Bool, Int64?, Int64?, [String]?, Int64?,
                Int64?, Bool?, Date?, UUID?
            )
            .self)
        var data: DataReference?
        var imported: ImportedDataReference?
        if let firstMs = r.7, let lastMs = r.8, let kinds = r.9 {
            if let keys = r.10 {
                data = DataReference(firstMs: firstMs, lastMs: lastMs, kinds: kinds, keys: keys)
            } else if let kind = kinds.first {
                imported = ImportedDataReference(kind: kind, span: DataSpan(firstMs: firstMs, lastMs: lastMs), count: r.13)
            }
        }
        return PartyEventRecord(
            id: r.0, type: r.1, createdAt: r.2, requestId: r.3, requestPublicId: r.4, aggregateId: r.12, thirdPartyId: r.5,
            individualId: r.6, data: data, imported: imported, grantActive: r.11, offerPublicId: r.19,
            grant: r.14.map { CurrentGrant(types: $0, fromMs: r.15, toMs: r.16, until: r.18, subscribed: r.17 ?? false) }
        )
    }
}

extension HealthDataReader {
    /// The samples event `eventId` refers to: of these types, starting in `[firstMs, lastMs]`, with
    /// these keys. An upload's event names each sample by its event key (migration 0049), which
    /// compaction does not change; one written before that migration by its client key, which a
    /// block without keys no longer holds: there its samples are those with the keys' tags.
    package func samples(
        eventId: Int64, individualId: Int64, types: [Int16], firstMs: Int64, lastMs: Int64, keys: [Int64]
    ) async throws
        -> [SampleRow]
    {
        let rows = try await database.query(
            """
            SELECT c.sample_type, c.start_ms, c.val, c.duration_ms,
                   data4help_settled_key(data4help_hour_offset(c.start_ms), COALESCE(c.tag, data4help_key_tag(c.key))) AS key, s.name
            FROM (
                SELECT b.sample_type, (extract(epoch FROM b.block_start) * 1000)::int8 + data4help_offset(u.offset_ms, u.offset_s) AS start_ms,
                       u.val, u.duration_ms, u.key, u.tag, u.source_id, b.individual_id
                FROM (
                    SELECT * FROM sample_blocks b
                    WHERE b.individual_id = \(individualId) AND b.sample_type = ANY (\(types)::int2[])
                      AND b.block_start >= 'epoch'::timestamptz + \(firstMs) * interval '1 millisecond'
                      AND b.block_start <= 'epoch'::timestamptz + \(lastMs) * interval '1 millisecond'
                    UNION ALL   -- the blocks across the first instant (migration 0050)
                    SELECT * FROM data4help_blocks_across(\(individualId), \(types)::int2[], 'epoch'::timestamptz + \(firstMs) * interval '1 millisecond')
                ) b
                CROSS JOIN LATERAL unnest(b.offsets_ms, b.offsets_s, b.vals, b.durations_ms, b.keys, b.source_ids, b.tags)
                    AS u(offset_ms, offset_s, val, duration_ms, key, source_id, tag)
            ) c
            LEFT JOIN sample_sources s ON s.individual_id = c.individual_id AND s.source_id = c.source_id
            WHERE c.key = ANY (\(keys)::int8[])
               OR data4help_event_key(c.start_ms, COALESCE(c.tag, data4help_key_tag(c.key))) = ANY (\(keys)::int8[])
               OR (c.key IS NULL AND \(eventId) < (SELECT client_keyed_events_before FROM sample_compaction)
                   AND c.tag = ANY (ARRAY(SELECT data4help_key_tag(k) FROM unnest(\(keys)::int8[]) AS k)))
            ORDER BY c.start_ms, c.sample_type, key
            """)
        return try rows.map { row in
            let (type, startMs, value, duration, key, source) = try row.decode((Int16, Int64, Float, Int32?, Int64, String?).self)
            return SampleRow(type: type, startMs: startMs, value: value, durationMs: duration, key: key, source: source)
        }
    }

    /// The location fixes an event refers to.
    package func locations(individualId: Int64, firstMs: Int64, lastMs: Int64, keys: [Int64]) async throws -> [LocationRow] {
        let rows = try await database.query(
            """
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
