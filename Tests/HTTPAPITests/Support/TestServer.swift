import DatabaseLink
import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Metrics
import NIOCore
import Prometheus

/// Runs the real application — the same `buildApplication` as `data4help serve` — on a free
/// port against a fresh PostgreSQL database, and talks to it over HTTP.
enum TestServer {
    /// One metrics backend per test process (swift-metrics can be bootstrapped only once).
    static let metrics: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetrics.factory(registry: registry))
        return registry
    }()

    static func run(
        database: DatabaseURL? = nil,
        configure: (inout AppConfiguration) -> Void = { _ in },
        _ body: @Sendable (APIClient) async throws -> Void
    ) async throws {
        let databaseURL = if let database { database } else { try await TestPostgres.shared.migratedDatabase() }
        var configuration = AppConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.databasePoolSize = 4
        configuration.migrationsDirectory = TestPostgres.migrationsDirectory.path
        configuration.openAPIPath = TestPostgres.repositoryRoot.appendingPathComponent("openapi/data4help.yaml").path
        configuration.pagesDirectory = TestPostgres.repositoryRoot.appendingPathComponent("Sources/HTTPAPI/Pages/Templates").path
        configure(&configuration)
        let app = try buildApplication(
            configuration: configuration, databaseURL: databaseURL, metrics: metrics, logger: TestPostgres.logger
        )
        try await app.test(.live) { client in
            try await body(APIClient(client: client))
        }
    }
}

/// A JSON-speaking wrapper over Hummingbird's live test client.
struct APIClient: Sendable {
    let client: any TestClientProtocol

    struct Reply: Sendable {
        let status: HTTPResponse.Status
        let headers: HTTPFields
        let data: Data

        /// The body as a JSON object (empty when it is not one).
        var json: [String: Any] {
            ((try? JSONSerialization.jsonObject(with: data)) as? [String: Any]) ?? [:]
        }

        func string(_ key: String) -> String? { json[key] as? String }

        /// Field names of a problem's `errors` list.
        var problemFields: [String] {
            ((json["errors"] as? [[String: Any]]) ?? []).compactMap { $0["field"] as? String }
        }

        var items: [[String: Any]] {
            (json["items"] as? [[String: Any]]) ?? []
        }
    }

    /// Sends a request; `json` is serialised as the body, `raw` sent as is.
    func send(
        _ method: HTTPRequest.Method, _ path: String, token: String? = nil, json: [String: any Sendable]? = nil,
        raw: String? = nil, headers extraHeaders: HTTPFields = [:]
    ) async throws -> Reply {
        var headers = extraHeaders
        if let token { headers[.authorization] = "Bearer \(token)" }
        var body: ByteBuffer?
        if let json {
            body = ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: json))
        } else if let raw {
            body = ByteBuffer(string: raw)
        }
        if body != nil, headers[.contentType] == nil { headers[.contentType] = "application/json" }
        return try await client.execute(uri: path, method: method, headers: headers, body: body) { response in
            Reply(status: response.status, headers: response.headers, data: Data(response.body.readableBytesView))
        }
    }
}
