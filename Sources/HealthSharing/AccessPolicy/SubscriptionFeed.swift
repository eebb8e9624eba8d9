import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation

/// A page of the feed: items grouped by the grant (request) they came under, in event order,
/// and the id of the last event read (the position to resume from).
package struct FeedPage: Sendable {
    package let items: [(requestId: UUID, item: FeedItem)]
    package let lastEventId: Int64?
}

/// The design document's "update all data coming from subscribed users": everything new across a
/// party's active subscribed grants since its cursor, resumable. Reads the party's event log
/// (`party_events`, written with each upload); each event read is logged as a disclosure.
package struct SubscriptionFeed: Sendable {
    /// A page stops after the event that brings it to this many items (events are never split).
    package static let itemsPerPage = 1_000
    static let eventsPerPage = 100

    let events: PartyEvents

    package init(events: PartyEvents) {
        self.events = events
    }

    /// The events after `afterEventId` (0 for the beginning), with their items as stored now.
    package func page(for thirdParty: ThirdPartyID, afterEventId: Int64) async throws -> FeedPage {
        let party = thirdParty.rowId
        var items: [(requestId: UUID, item: FeedItem)] = []
        var lastEventId: Int64?
        for event in try await events.after(afterEventId, thirdPartyId: party, dataOnly: true, limit: Self.eventsPerPage) {
            try await events.recordDisclosure(of: event, via: .pull)
            if let requestId = event.requestId { items += event.items.map { (requestId, $0) } }
            lastEventId = event.id
            if items.count >= Self.itemsPerPage { break }
        }
        return FeedPage(items: items, lastEventId: lastEventId)
    }
}
