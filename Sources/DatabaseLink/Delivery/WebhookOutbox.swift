import Data4HelpCore
import Foundation
import Logging
import PostgresNIO

/// Who an outbox message goes to: the webhook endpoints it is queued for.
package enum OutboxRecipients: Sendable {
    /// The account's own endpoint (an organisation's, or an individual's device).
    case endpoint(of: AccountReference)
    /// The endpoints the individual named as emergency contacts (`webhook_endpoints.sos_contact_of`).
    case sosContacts(ofIndividual: Int64)
    /// The devices of everyone enrolled in a run event.
    case runParticipants(runId: Int64)
}

/// The one writer of messages with a body of their own into `webhook_deliveries`: a component
/// decides what to say (a typed body rendered by the wire encoder, `OutboxMessage`), and the
/// message is committed with the change it reports, in the caller's transaction. (Party events —
/// `data.created`, `request.*`, `aggregate.*` — reach the outbox from `party_events` instead; see
/// the README's "Where each rule lives".)
package enum WebhookOutbox {
    /// Queues `message` for every endpoint of `recipients`, on the caller's connection (inside its
    /// transaction); `requestId` orders it with the other deliveries of that request. Answers the
    /// deliveries' public ids (none when there is no such endpoint).
    @discardableResult
    static func enqueue(
        _ message: OutboxMessage, to recipients: OutboxRecipients, requestId: Int64? = nil, on connection: LeasedConnection, logger: Logger
    ) async throws -> [UUID] {
        let (type, payload) = (message.eventType, message.payload)
        let statement: PostgresQuery =
            switch recipients {
            case .endpoint(of: .individual(let id)):
                """
                INSERT INTO webhook_deliveries (endpoint_id, request_id, event_type, payload)
                SELECT id, \(requestId), \(type), \(payload)::jsonb FROM webhook_endpoints WHERE individual_id = \(id)
                RETURNING public_id
                """
            case .endpoint(of: .thirdParty(let id)):
                """
                INSERT INTO webhook_deliveries (endpoint_id, request_id, event_type, payload)
                SELECT id, \(requestId), \(type), \(payload)::jsonb FROM webhook_endpoints WHERE third_party_id = \(id)
                RETURNING public_id
                """
            case .sosContacts(let individualId):
                """
                INSERT INTO webhook_deliveries (endpoint_id, request_id, event_type, payload)
                SELECT id, \(requestId), \(type), \(payload)::jsonb FROM webhook_endpoints WHERE sos_contact_of = \(individualId)
                RETURNING public_id
                """
            case .runParticipants(let runId):
                """
                INSERT INTO webhook_deliveries (endpoint_id, request_id, event_type, payload)
                SELECT w.id, \(requestId), \(type), \(payload)::jsonb
                FROM run_participants p JOIN webhook_endpoints w ON w.individual_id = p.individual_id WHERE p.run_id = \(runId)
                RETURNING public_id
                """
            }
        return try await connection.query(statement, logger: logger).collect().map { try $0.decode(UUID.self) }
    }
}
