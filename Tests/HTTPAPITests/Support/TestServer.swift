import AsyncHTTPClient
import DatabaseLink
import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import PostgresNIO
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
        do {
            try await serve(database: database, configure: configure, body)
        } catch let error as PSQLError {
            // PSQLError's description hides the server's message and SQLSTATE; a whole-suite run on a
            // busy machine failed twenty tests at one instant with nothing but "PSQLError" (issue 18).
            throw DatabaseFailure(description: String(reflecting: error))
        }
    }

    struct DatabaseFailure: Error, CustomStringConvertible {
        let description: String
    }

    private static func serve(
        database: DatabaseURL?, configure: (inout AppConfiguration) -> Void, _ body: @Sendable (APIClient) async throws -> Void
    ) async throws {
        let databaseURL = if let database { database } else { try await TestPostgres.shared.migratedDatabase() }
        var configuration = AppConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.databasePoolSize = 4
        configuration.migrationsDirectory = TestPostgres.migrationsDirectory.path
        configuration.openAPIPath = TestPostgres.repositoryRoot.appendingPathComponent("openapi/data4help.yaml").path
        configuration.pagesDirectory = TestPostgres.repositoryRoot.appendingPathComponent("Sources/HTTPAPI/Pages/Templates").path
        configuration.mailPickupDirectory = Mailbox.directory.path
        // Tests that are not about the request timeout must not meet it: an aggregate over a
        // seeded population took over 30 s (the production default) while this suite ran beside
        // a clean-clone `make test`, a build and a contract test (load 9–10 on 2 cores), and was
        // answered 503. LimitsTests sets its own small limit to test the timeout itself.
        configuration.requestTimeout = .seconds(120)
        configuration.mapTileURL = ""  // offline: the plain SVG course (a test sets its own tile server)
        configure(&configuration)
        let pool = PoolEvents()
        let app = try buildApplication(
            configuration: configuration, databaseURL: databaseURL, metrics: metrics,
            logger: pool.logger(label: TestPostgres.logger.label, level: TestPostgres.logger.logLevel)
        )
        // Above the server's own limit, after which it answers 503 itself (see `LiveServer`).
        try await LiveServer.run(app, clientTimeout: configuration.requestTimeout + .seconds(30), diagnostics: { pool.unclosed }) { client in
            try await body(APIClient(client: client))
        }
    }
}

/// What sends requests to a Data4Help server and reads the replies: the application under test
/// (`APIClient`) or a server at a URL (`RemoteAPI`: real processes, a load balancer).
protocol APISending: Sendable {
    func send(
        _ method: HTTPRequest.Method, _ path: String, token: String?, json: [String: any Sendable]?, raw: String?, headers extraHeaders: HTTPFields
    ) async throws -> APIClient.Reply
}

extension APISending {
    func send(
        _ method: HTTPRequest.Method, _ path: String, token: String? = nil, json: [String: any Sendable]? = nil, raw: String? = nil
    ) async throws -> APIClient.Reply {
        try await send(method, path, token: token, json: json, raw: raw, headers: [:])
    }

    /// The body of a request: `json` serialised, or `raw` as is; and its headers.
    static func request(token: String?, json: [String: any Sendable]?, raw: String?, headers: HTTPFields) throws -> (HTTPFields, ByteBuffer?) {
        var headers = headers
        if let token { headers[.authorization] = "Bearer \(token)" }
        var body: ByteBuffer?
        if let json {
            body = ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: json))
        } else if let raw {
            body = ByteBuffer(string: raw)
        }
        if body != nil, headers[.contentType] == nil { headers[.contentType] = "application/json" }
        return (headers, body)
    }
}

/// A JSON-speaking wrapper over Hummingbird's live test client.
struct APIClient: APISending {
    let client: LiveClient

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
        let (headers, body) = try Self.request(token: token, json: json, raw: raw, headers: extraHeaders)
        let response = try await client.execute(uri: path, method: method, headers: headers, body: body)
        return Reply(status: response.status, headers: response.headers, data: Data((response.body ?? ByteBuffer()).readableBytesView))
    }
}

/// A Data4Help server at a URL (a real process, or a load balancer in front of several).
struct RemoteAPI: APISending {
    let base: String

    /// Redirects are answers to look at (the portals' 303s), not to follow. Never shut down:
    /// one for the test process.
    static let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: .init(redirectConfiguration: .disallow))

    func send(
        _ method: HTTPRequest.Method, _ path: String, token: String? = nil, json: [String: any Sendable]? = nil,
        raw: String? = nil, headers extraHeaders: HTTPFields = [:]
    ) async throws -> APIClient.Reply {
        let (headers, body) = try Self.request(token: token, json: json, raw: raw, headers: extraHeaders)
        var request = HTTPClientRequest(url: base + path)
        request.method = .init(rawValue: method.rawValue)
        for field in headers { request.headers.add(name: field.name.rawName, value: field.value) }
        if let body { request.body = .bytes(body) }
        let response = try await Self.client.execute(request, timeout: .seconds(30))
        var fields = HTTPFields()
        for (name, value) in response.headers { if let field = HTTPField.Name(name) { fields.append(HTTPField(name: field, value: value)) } }
        let data = try await response.body.collect(upTo: 1 << 26)
        return APIClient.Reply(status: HTTPResponse.Status(code: Int(response.status.code)), headers: fields, data: Data(data.readableBytesView))
    }
}
