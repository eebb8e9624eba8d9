import Data4HelpCore
import DatabaseLink
import Foundation

/// One item of new data under a subscribed grant.
package enum FeedItem: Sendable, Equatable {
    case sample(StoredSample)
    case location(StoredLocationFix)
    /// A workout's totals (its route and heart rate travel as `location` and samples, when granted).
    case workout(Workout)
    /// What an import added of one kind (`data.imported`): read by cursor, not carried.
    case imported(ImportedDataReference)

    /// The kind of data it is, as a grant names it, and when it is (for a grant's window).
    var kindAndTime: (kind: String, timeMs: Int64) {
        switch self {
        case .sample(let sample): (sample.type.rawValue, sample.position.startMs)
        case .location(let fix): (DataKind.locationName, fix.position.timeMs)
        case .workout(let workout): (DataKind.workoutName, workout.start.epochMilliseconds)
        case .imported(let reference): (reference.kind, reference.span.firstMs)
        }
    }
}

/// An event of a party's log as every channel hands it out (pull feed, stream, webhook): its
/// kind, the request it concerns and, for `data.created`, the items as they are stored now.
package struct PartyEvent: Sendable {
    package let id: Int64
    package let type: String
    package let createdAt: Date
    /// The request the event is about (nil for an aggregate's or an offer's event).
    package let requestId: UUID?
    package let items: [FeedItem]
    /// For `aggregate.updated` and `aggregate.stopped`: the aggregate answer.
    package let aggregate: AggregateResult?
    /// Who the event is about and for, for the access log.
    let record: PartyEventRecord

    /// For `offer.received`: the offer.
    package var offerId: UUID? { record.offerPublicId }

    /// For `grant.changed`: the grant as it stands when the event is read or sent.
    package var grant: CurrentGrant? { type == "grant.changed" ? record.grant : nil }
}

/// How an event reached its party, as the individual's access log names it.
package enum DisclosureChannel: String, Sendable {
    case pull, stream, webhook
}

/// Turns the outbox rows of `party_events` into events with their data, and logs every handing
/// out of data as a disclosure. The one place the three delivery channels share.
package struct PartyEvents: Sendable {
    let store: PartyEventStore
    let reader: HealthDataReader
    let workouts: WorkoutStore
    let disclosures: DisclosureStore
    let aggregates: AggregateQueryStore

    package init(database: Database) {
        self.store = PartyEventStore(database: database)
        self.workouts = WorkoutStore(database: database)
        self.aggregates = AggregateQueryStore(database: database)
        self.reader = HealthDataReader(database: database)
        self.disclosures = DisclosureStore(database: database)
    }

    /// The party's events after `afterId`, with their data; data events of grants that are no
    /// longer active are skipped (revocation stops every channel at once).
    package func after(_ afterId: Int64, thirdPartyId: Int64, dataOnly: Bool, limit: Int) async throws -> [PartyEvent] {
        var events: [PartyEvent] = []
        for record in try await store.events(thirdPartyId: thirdPartyId, afterId: afterId, dataOnly: dataOnly, limit: limit) {
            events.append(try await resolve(record))
        }
        return events
    }

    /// One event by id with its data; nil when it delivers nothing any more (a data event whose
    /// grant is no longer active, or whose data is gone).
    package func event(id: Int64) async throws -> PartyEvent? {
        guard let record = try await store.event(id: id) else { return nil }
        let event = try await resolve(record)
        if record.data != nil, !record.grantActive || event.items.isEmpty { return nil }
        return event
    }

    /// Logs that the event's data went to its party (nothing to log for state changes).
    package func recordDisclosure(of event: PartyEvent, via channel: DisclosureChannel) async throws {
        guard let entry = Self.disclosure(of: event, via: channel) else { return }
        try await disclosures.record(entry)
    }

    /// The access log's entry for the event's data going to its party; nil for state changes.
    package static func disclosure(of event: PartyEvent, via channel: DisclosureChannel) -> NewDisclosure? {
        guard let data = event.record.data, let individualId = event.record.individualId, let requestId = event.record.requestId,
            !event.items.isEmpty
        else { return nil }
        return NewDisclosure(
            individualId: individualId, thirdPartyId: event.record.thirdPartyId, requestId: requestId,
            channel: channel.rawValue, types: data.kinds.sorted(), itemCount: event.items.count
        )
    }

    private func resolve(_ record: PartyEventRecord) async throws -> PartyEvent {
        var items: [FeedItem] = []
        // What the grant covers now: a change since the event narrows what it delivers, at once.
        if let data = record.data, let individualId = record.individualId, record.grantActive, let grant = record.grant, grant.subscribed {
            let sampleTypes = data.kinds.compactMap { SampleType(rawValue: $0)?.storageCode }
            if !sampleTypes.isEmpty {
                let rows = try await reader.samples(
                    eventId: record.id, individualId: individualId, types: sampleTypes, firstMs: data.firstMs, lastMs: data.lastMs, keys: data.keys
                )
                items += rows.compactMap(StoredSample.init(row:)).map(FeedItem.sample)
            }
            if data.kinds.contains(DataKind.locationName) {
                let rows = try await reader.locations(individualId: individualId, firstMs: data.firstMs, lastMs: data.lastMs, keys: data.keys)
                items += rows.map(StoredLocationFix.init(row:)).map(FeedItem.location)
            }
            if data.kinds.contains(DataKind.workoutName) {
                items += try await workouts.workouts(individualId: individualId, ids: data.keys).map(FeedItem.workout)
            }
            items.removeAll { !grant.covers(kind: $0.kindAndTime.kind, timeMs: $0.kindAndTime.timeMs) }
        }
        if let imported = record.imported, record.grantActive { items.append(.imported(imported)) }
        var aggregate: AggregateResult?
        if let aggregateId = record.aggregateId, let query = try await aggregates.find(id: aggregateId) {
            aggregate = try AggregateResult(query, repeated: false)
        }
        return PartyEvent(
            id: record.id, type: record.type, createdAt: record.createdAt, requestId: record.requestPublicId, items: items,
            aggregate: aggregate, record: record
        )
    }
}
