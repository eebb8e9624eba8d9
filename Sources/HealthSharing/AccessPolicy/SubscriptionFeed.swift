import AccessManager
import DatabaseLink
import Foundation

/// One item of a party's feed: new data under one of its subscribed grants.
package enum FeedItem: Sendable, Equatable {
    case sample(StoredSample)
    case location(StoredLocationFix)
}

/// A page of the feed: items grouped by the grant (request) they came under, in event order,
/// and the id of the last event read (the position to resume from).
package struct FeedPage: Sendable {
    package let items: [(requestId: UUID, item: FeedItem)]
    package let lastEventId: Int64?
}

/// The design document's "update all data coming from subscribed users": everything new across a
/// party's active subscribed grants since its cursor, resumable. Reads the outbox
/// (`data_events`) written with each upload; each event read is logged as a disclosure.
package struct SubscriptionFeed: Sendable {
    /// A page stops after the event that brings it to this many items (events are never split).
    package static let itemsPerPage = 1_000
    static let eventsPerPage = 100

    let events: DataEventStore
    let reader: HealthDataReader
    let disclosures: DisclosureStore

    package init(database: Database) {
        self.events = DataEventStore(database: database)
        self.reader = HealthDataReader(database: database)
        self.disclosures = DisclosureStore(database: database)
    }

    /// The events after `afterEventId` (0 for the beginning), with their items as stored now.
    package func page(for principal: Principal, afterEventId: Int64) async throws -> FeedPage {
        guard case .thirdParty(let party) = principal.account else { throw AccessRequestError.notFound }
        var items: [(requestId: UUID, item: FeedItem)] = []
        var lastEventId: Int64?
        for event in try await events.events(thirdPartyId: party, afterId: afterEventId, limit: Self.eventsPerPage) {
            let sampleTypes = event.kinds.compactMap { SampleType(rawValue: $0)?.storageCode }
            var found: [FeedItem] = []
            if !sampleTypes.isEmpty {
                let rows = try await reader.samples(
                    individualId: event.individualId, types: sampleTypes, firstMs: event.firstMs, lastMs: event.lastMs, keys: event.keys
                )
                found += rows.compactMap(StoredSample.init(row:)).map(FeedItem.sample)
            }
            if event.kinds.contains(DataKind.locationName) {
                let rows = try await reader.locations(individualId: event.individualId, firstMs: event.firstMs, lastMs: event.lastMs, keys: event.keys)
                found += rows.map(StoredLocationFix.init(row:)).map(FeedItem.location)
            }
            if !found.isEmpty {
                try await disclosures.record(
                    individualId: event.individualId, thirdPartyId: party, requestId: event.requestId, channel: "pull",
                    types: event.kinds.sorted(), itemCount: found.count
                )
            }
            items += found.map { (event.requestPublicId, $0) }
            lastEventId = event.id
            if items.count >= Self.itemsPerPage { break }
        }
        return FeedPage(items: items, lastEventId: lastEventId)
    }
}
