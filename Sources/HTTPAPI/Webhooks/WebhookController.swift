import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// An account's webhook endpoint and its delivery log, under `prefix`: a third party's events at
/// `/api/thirdparties/webhook`, an individual's device notifications at `/api/users/notifications`.
struct WebhookController<Context: AuthenticatedRequestContext> {
    let endpoints: WebhookEndpoints
    let body: JSONBody
    let prefix: String

    func addRoutes(to group: some RouterMethods<Context>) {
        let base = prefix
        group.put(RouterPath(base)) { request, context -> EditedResponse<WebhookEndpointBody> in
            let form = try await body.decode(WebhookEndpointForm.self, from: request, context: context)
            let (endpoint, secret) = try await endpoints.register(context.principal.account, url: try form.validated())
            return EditedResponse(
                status: secret == nil ? .ok : .created,
                headers: [.cacheControl: "no-store"],
                response: WebhookEndpointBody(endpoint, secret: secret)
            )
        }
        group.get(RouterPath(base)) { _, context in
            try await WebhookEndpointBody(endpoints.endpoint(context.principal.account), secret: nil)
        }
        group.delete(RouterPath(base)) { _, context in
            try await endpoints.remove(context.principal.account)
            return Response(status: .noContent)
        }
        group.post(RouterPath("\(base)/secret")) { _, context -> EditedResponse<WebhookSecretBody> in
            let secret = try await endpoints.rotateSecret(context.principal.account)
            return EditedResponse(headers: [.cacheControl: "no-store"], response: WebhookSecretBody(secret: secret))
        }
        group.post(RouterPath("\(base)/test")) { _, context -> EditedResponse<DeliveryBody> in
            let id = try await endpoints.sendTest(context.principal.account)
            return EditedResponse(status: .accepted, response: DeliveryBody(try await endpoints.delivery(context.principal.account, id: id)))
        }
        group.get(RouterPath("\(base)/deliveries")) { request, context -> Page<DeliveryBody> in
            let pagination = try KeysetPagination(request)
            let rows = try await endpoints.deliveries(context.principal.account, beforeId: pagination.beforeId, limit: pagination.limit + 1)
            return pagination.page(rows, id: \.id, item: DeliveryBody.init)
        }
        group.get(RouterPath("\(base)/deliveries/{deliveryId}")) { _, context in
            try await DeliveryBody(endpoints.delivery(context.principal.account, id: Self.deliveryId(context)))
        }
        group.post(RouterPath("\(base)/deliveries/{deliveryId}/redeliver")) { _, context -> EditedResponse<DeliveryBody> in
            let delivery = try await endpoints.redeliver(context.principal.account, id: Self.deliveryId(context))
            return EditedResponse(status: .accepted, response: DeliveryBody(delivery))
        }
    }

    /// A malformed id names no delivery of mine: 404 like any other.
    private static func deliveryId(_ context: Context) throws -> UUID {
        return try context.parameters.id("deliveryId", missing: WebhookError.notFound)
    }
}

struct WebhookEndpointForm: Decodable {
    var url: String?
}

/// The endpoint; `secret` only in the answer that created it.
struct WebhookEndpointBody: ResponseEncodable {
    let url: String
    let createdAt: Date
    let updatedAt: Date
    let secret: String?

    init(_ record: WebhookEndpointRecord, secret: String?) {
        url = record.url
        createdAt = record.createdAt
        updatedAt = record.updatedAt
        self.secret = secret
    }
}

struct WebhookSecretBody: ResponseEncodable {
    let secret: String
}

/// A delivery in the log: its id (the receiver's de-duplication key), event, state and attempts.
struct DeliveryBody: ResponseEncodable, Sendable {
    let id: String
    let eventType: String
    let requestId: String?
    let status: String
    let createdAt: Date
    let nextAttemptAt: Date?
    let finishedAt: Date?
    let attempts: [Attempt]

    struct Attempt: Encodable, Sendable {
        let attempt: Int
        let at: Date
        let durationMs: Int
        let statusCode: Int?
        let error: String?

        private enum CodingKeys: String, CodingKey { case attempt, at, durationMs, statusCode, error }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(attempt, forKey: .attempt)
            try container.encode(at, forKey: .at)
            try container.encode(durationMs, forKey: .durationMs)
            try container.encode(statusCode, forKey: .statusCode)  // explicit null: no answer came
            try container.encode(error, forKey: .error)
        }
    }

    init(_ record: DeliveryRecord) {
        id = record.publicId.wireString
        eventType = record.eventType
        requestId = record.requestPublicId?.wireString
        status = record.state
        createdAt = record.createdAt
        nextAttemptAt = record.nextAttemptAt
        finishedAt = record.finishedAt
        attempts = record.attempts.map {
            Attempt(attempt: $0.attempt, at: $0.at, durationMs: $0.durationMs, statusCode: $0.statusCode, error: $0.error)
        }
    }

    private enum CodingKeys: String, CodingKey { case id, eventType, requestId, status, createdAt, nextAttemptAt, finishedAt, attempts }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(eventType, forKey: .eventType)
        try container.encode(requestId, forKey: .requestId)
        try container.encode(status, forKey: .status)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(nextAttemptAt, forKey: .nextAttemptAt)
        try container.encode(finishedAt, forKey: .finishedAt)
        try container.encode(attempts, forKey: .attempts)
    }
}
