import Data4HelpCore
import Foundation
import HealthSharing

/// An event as the stream and webhooks send it:
/// `{ id, type, createdAt, requestId, offerId, data }` — `data.items` for `data.created`,
/// `data.aggregate` for the `aggregate.*` events (which have no `requestId`), `offerId` for
/// `offer.received` (no `requestId` either); `id` is
/// the delivery id in a webhook (de-duplicate on it) and the event id in the stream.
struct EventBody: Encodable, Sendable {
    let id: String
    let type: String
    let createdAt: Date
    let requestId: String?
    let offerId: String?
    let data: EventData?

    /// `items` for `data.created`; `aggregate` for `aggregate.updated` and `aggregate.stopped`;
    /// `grant` and `subscribe` for `grant.changed`: the grant as it stands when the event is sent.
    struct EventData: Encodable, Sendable {
        var items: [FeedItemBody]?
        var aggregate: AggregateResultBody?
        var grant: GrantScopeBody?
        var subscribe: Bool?
    }

    struct GrantScopeBody: Encodable, Sendable {
        let types: [String]
        let dataFrom: String?
        let dataTo: String?
        let accessUntil: String?
    }

    init(id: String, event: PartyEvent) {
        self.id = id
        type = event.type
        createdAt = event.createdAt
        requestId = event.requestId?.wireString
        offerId = event.offerId?.wireString
        if event.type == "data.created" || event.type == "data.imported", let request = event.requestId?.wireString {
            data = EventData(items: event.items.map { FeedItemBody(requestId: request, item: $0) })
        } else if let grant = event.grant {
            let time = { (ms: Int64) in WireFormat.timestamp(Date(timeIntervalSince1970: Double(ms) / 1000)) }
            data = EventData(
                grant: GrantScopeBody(
                    types: grant.types, dataFrom: grant.fromMs.map(time), dataTo: grant.toMs.map(time),
                    accessUntil: grant.until.map(WireFormat.timestamp)),
                subscribe: grant.subscribed)
        } else if let aggregate = event.aggregate {
            data = EventData(aggregate: AggregateResultBody(aggregate))
        } else {
            data = nil
        }
    }

    private enum CodingKeys: String, CodingKey { case id, type, createdAt, requestId, offerId, data }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(type, forKey: .type)
        try container.encode(WireFormat.timestamp(createdAt), forKey: .createdAt)
        try container.encodeIfPresent(requestId, forKey: .requestId)
        try container.encodeIfPresent(offerId, forKey: .offerId)
        try container.encodeIfPresent(data, forKey: .data)
    }
}

/// The webhook bodies in the API's wire format. A delivery of a party event carries the event
/// (`EventBody`, with the delivery id); a delivery with a body of its own (a test ping, a
/// notification to an individual's device) carries `{ id, type, createdAt, data }`.
struct WireWebhookEncoder: WebhookBodyEncoder {
    func body(for delivery: ClaimedDelivery, event: PartyEvent?) throws -> [UInt8] {
        let id = delivery.publicId.wireString
        if let event {
            return Array(try WireFormat.encoder().encode(EventBody(id: id, event: event)))
        }
        let data = try JSONSerialization.jsonObject(with: Data((delivery.payload ?? "{}").utf8))
        let envelope: [String: Any] = [
            "id": id, "type": delivery.eventType, "createdAt": WireFormat.timestamp(delivery.createdAt), "data": data,
        ]
        return Array(try JSONSerialization.data(withJSONObject: envelope, options: [.sortedKeys, .withoutEscapingSlashes]))
    }
}
