import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation

/// What a caller did wrong with a webhook endpoint or delivery.
package enum WebhookError: Error, Equatable {
    case invalidURL(String)
    /// No endpoint registered (for secret rotation, tests), or no such delivery of mine.
    case notFound
    /// The delivery is still being attempted.
    case stillPending
}

/// An account's webhook endpoint: a third party's (its events) or an individual's device
/// (notifications). Registration, secret rotation, removal, a test ping, and the delivery log
/// with redelivery. Every call is scoped to the caller's own endpoint.
package struct WebhookEndpoints: Sendable {
    let store: WebhookStore
    let allowPrivateNetworks: Bool

    package init(database: Database, allowPrivateNetworks: Bool) {
        self.store = WebhookStore(database: database)
        self.allowPrivateNetworks = allowPrivateNetworks
    }

    /// Registers or changes the URL. Returns the signing secret when the endpoint is new (the only
    /// time it is shown); a changed URL keeps its secret.
    package func register(_ owner: AccountReference, url text: String) async throws -> (endpoint: WebhookEndpointRecord, newSecret: String?) {
        let url: WebhookURL
        do {
            url = try WebhookURL(parsing: text, allowPrivateNetworks: allowPrivateNetworks)
        } catch .invalid(let reason) {
            throw WebhookError.invalidURL(reason)
        }
        let secret = try await store.setEndpoint(owner: owner, url: url.string, newSecret: BearerSecret.newWebhookSecret())
        guard let endpoint = try await store.endpoint(owner: owner) else { throw WebhookError.notFound }
        return (endpoint, secret)
    }

    package func endpoint(_ owner: AccountReference) async throws -> WebhookEndpointRecord {
        guard let endpoint = try await store.endpoint(owner: owner) else { throw WebhookError.notFound }
        return endpoint
    }

    /// A new signing secret, shown once; the old one stops signing at once.
    package func rotateSecret(_ owner: AccountReference) async throws -> String {
        let secret = BearerSecret.newWebhookSecret()
        guard try await store.rotateSecret(owner: owner, newSecret: secret) else { throw WebhookError.notFound }
        return secret
    }

    package func remove(_ owner: AccountReference) async throws {
        guard try await store.deleteEndpoint(owner: owner) else { throw WebhookError.notFound }
    }

    /// Queues a `ping` event to the endpoint; returns its delivery id.
    package func sendTest(_ owner: AccountReference) async throws -> UUID {
        let ping = try OutboxMessage(eventType: "ping", body: ["message": "This is a test event from Data4Help."])
        guard let id = try await store.enqueue(ping, owner: owner) else {
            throw WebhookError.notFound
        }
        return id
    }

    package func deliveries(_ owner: AccountReference, beforeId: Int64?, limit: Int) async throws -> [DeliveryRecord] {
        try await store.deliveries(owner: owner, beforeId: beforeId, limit: limit)
    }

    package func delivery(_ owner: AccountReference, id: UUID) async throws -> DeliveryRecord {
        guard let delivery = try await store.delivery(owner: owner, publicId: id) else { throw WebhookError.notFound }
        return delivery
    }

    /// Sends a finished delivery again (same delivery id, a fresh round of attempts).
    package func redeliver(_ owner: AccountReference, id: UUID) async throws -> DeliveryRecord {
        switch try await store.redeliver(owner: owner, publicId: id) {
        case nil: throw WebhookError.notFound
        case false?: throw WebhookError.stillPending
        case true?: return try await delivery(owner, id: id)
        }
    }
}
