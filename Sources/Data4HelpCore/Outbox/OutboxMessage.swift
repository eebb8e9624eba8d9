import Foundation

/// A message for the webhook outbox (`webhook_deliveries`): its event type and its body, rendered
/// once, by the wire encoder, from a typed value of the component that decided to send it. The
/// outbox stores the body as it is and delivers it inside the usual envelope
/// (`{ id, type, createdAt, data }`).
package struct OutboxMessage: Sendable, Equatable {
    /// `request.created`, `sos.detected`, …: the envelope's `type`.
    package let eventType: String
    /// A JSON object: the envelope's `data`.
    package let payload: String

    package init(eventType: String, body: some Encodable) throws {
        self.eventType = eventType
        payload = String(decoding: try WireFormat.encoder().encode(body), as: UTF8.self)
    }
}

/// A typed body a component sends through the outbox: its event type, and its fields as the
/// wire encoder renders them.
package protocol OutboxNotice: Encodable {
    static var eventType: String { get }
}

extension OutboxNotice {
    /// The notice rendered for the outbox.
    package var message: OutboxMessage {
        get throws { try OutboxMessage(eventType: Self.eventType, body: self) }
    }
}
