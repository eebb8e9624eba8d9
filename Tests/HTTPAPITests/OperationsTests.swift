import Foundation
import HTTPAPI
import HTTPTypes
import Testing

@Suite("Health, readiness, metrics and the contract")
struct OperationsTests {
    @Test func healthAndReadiness() async throws {
        // Readiness is the database's answer within READINESS_TIMEOUT_MS (2 s by default): what is
        // tested here is what it answers, not how fast a machine running the whole suite is, so
        // the database gets 25 s, under the 30 s request timeout (on a busy machine a 2 s check said 503
        // for 30 s on end, rightly).
        try await TestServer.run(configure: { $0.readinessTimeout = .seconds(25) }) { api in
            #expect(try await api.send(.get, "/healthz").string("status") == "ok")
            let ready = try await api.send(.get, "/readyz")
            #expect(ready.status == .ok, "\(String(decoding: ready.data, as: UTF8.self))")
            #expect(ready.string("status") == "ready")
        }
    }

    @Test func metricsNeedTheTokenWhenOneIsSet() async throws {
        try await TestServer.run(configure: { (configuration: inout AppConfiguration) in
            configuration.metricsToken = "a metrics token of some length"
        }) { api in
            let none = try await api.send(.get, "/metrics"), wrong = try await api.send(.get, "/metrics", token: "not the metrics token")
            let right = try await api.send(.get, "/metrics", token: "a metrics token of some length")
            #expect(none.status == .unauthorized && wrong.status == .unauthorized && right.status == .ok)
        }
    }

    /// nosniff on every answer, errors included; no-store on every answer to a credentialed request.
    @Test func securityHeadersOnEveryResponse() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            for reply in [
                try await api.send(.get, "/api/users/me", token: token), try await api.send(.get, "/api/users/sos", token: token),
                try await api.send(.get, "/api/users/me", token: "d4ht_nonsense"),
            ] {
                #expect(reply.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
                #expect(reply.headers[.cacheControl] == "no-store")
            }
            #expect(try await api.send(.get, "/healthz").headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
            #expect(try await api.send(.get, "/no/such/route").headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
        }
    }

    @Test func metricsCountRequestsPerRoute() async throws {
        try await TestServer.run { api in
            _ = try await api.send(.get, "/api/users/me")
            let metrics = try await api.send(.get, "/metrics")
            #expect(metrics.status == .ok)
            let text = String(decoding: metrics.data, as: UTF8.self)
            #expect(text.contains(#"hb_requests{http_route="/api/users/me",http_request_method="GET",http_response_status_code="401"}"#))
            #expect(text.contains("http_server_request_duration_bucket"))
            #expect(text.contains("db_pool_connections_in_use"))
        }
    }

    @Test func servesTheOpenAPIDocument() async throws {
        try await TestServer.run { api in
            let document = try await api.send(.get, "/openapi.yaml")
            #expect(document.status == .ok)
            #expect(String(decoding: document.data, as: UTF8.self).hasPrefix("openapi: 3.1"))
        }
    }
}
