import Foundation

/// An account's webhook endpoint, without its secret.
package struct WebhookEndpointRecord: Sendable, Equatable {
    package var url: String
    package var createdAt: Date
    package var updatedAt: Date

    package init(url: String, createdAt: Date, updatedAt: Date) {
        self.url = url
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}
