import DatabaseLink
import Foundation
import HealthSharing

/// An event as the stream and webhooks send it:
/// `{ id, type, createdAt, requestId, data: { items } }` — `data` for `data.created` only; `id` is
/// the delivery id in a webhook (de-duplicate on it) and the event id in the stream.
struct EventBody: Encodable, Sendable {
    let id: String
    let type: String
    let createdAt: Date
    let requestId: String
    let data: EventData?

    struct EventData: Encodable, Sendable {
        let items: [FeedItemBody]
    }

    init(id: String, event: PartyEvent) {
        self.id = id
        type = event.type
        createdAt = event.createdAt
        requestId = event.requestId.wireString
        data = event.type == "data.created"
            ? EventData(items: event.items.map { FeedItemBody(requestId: event.requestId.wireString, item: $0) })
            : nil
    }

    private enum CodingKeys: String, CodingKey { case id, type, createdAt, requestId, data }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(type, forKey: .type)
        try container.encode(WireFormat.timestamp(createdAt), forKey: .createdAt)
        try container.encode(requestId, forKey: .requestId)
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
