import DatabaseLink
import Foundation
import Hummingbird
import Logging
import Prometheus

/// Endpoints for operators and tooling: liveness, readiness, metrics and the API contract.
struct OperationsController {
    let migrator: Migrator
    let metrics: PrometheusCollectorRegistry
    let openAPIDocument: ByteBuffer
    /// `METRICS_TOKEN`: with it, `/metrics` needs `Authorization: Bearer <token>`; without it,
    /// only loopback clients (a sidecar, the node's agent) may scrape.
    var metricsToken: String? = nil
    /// Records the gauges of what the server holds, just before each scrape.
    var beforeScrape: @Sendable () -> Void = {}
    /// `READINESS_TIMEOUT_MS`: how long the database has to answer a readiness check (keep it
    /// below the probe's own timeout).
    var readinessTimeout: Duration = .seconds(2)

    func addRoutes(to router: some RouterMethods<AppRequestContext>) {
        router.get("healthz", use: liveness)
        router.get("readyz", use: readiness)
        router.get("metrics", use: scrape)
        router.get("openapi.yaml", use: contract)
    }

    /// `GET /healthz`: the process is up and serving HTTP; says nothing about its dependencies.
    @Sendable func liveness(_ request: Request, context: AppRequestContext) async throws -> HealthStatus {
        HealthStatus(status: "ok")
    }

    /// `GET /readyz`: ready for traffic — PostgreSQL answers and every migration is applied.
    @Sendable func readiness(_ request: Request, context: AppRequestContext) async throws -> HealthStatus {
        let pending: Int
        do {
            pending = try await withTimeout(readinessTimeout) { try await migrator.pendingCount() }
        } catch {
            // Which of the two, for whoever reads the probe's answer or the log.
            let late = error is TimedOut
            context.logger.warning("readiness check: database \(late ? "too slow" : "not reachable")")
            throw Problem(
                .serviceUnavailable, slug: "not-ready", title: "Not ready",
                detail: late ? "The database did not answer within \(readinessTimeout)." : "The database is not reachable.",
                headers: [.retryAfter: "2"]
            )
        }
        guard pending == 0 else {
            throw Problem(
                .serviceUnavailable, slug: "not-ready", title: "Not ready",
                detail: "\(pending) database migration(s) are not applied yet.", headers: [.retryAfter: "2"]
            )
        }
        return HealthStatus(status: "ready")
    }

    /// `GET /metrics`: Prometheus text, to the metrics token or to loopback clients only (who uses what and how much is not for the public).
    @Sendable func scrape(_ request: Request, context: AppRequestContext) async throws -> Response {
        if let metricsToken {
            guard case .bearer(let sent) = AuthorizationHeader(request.headers), WebSession.same(sent, metricsToken) else {
                throw Problem(
                    .unauthorized, slug: "metrics-token", title: "Metrics token required",
                    detail: "Send 'Authorization: Bearer <METRICS_TOKEN>'.", headers: [.wwwAuthenticate: #"Bearer realm="metrics""#]
                )
            }
        } else if !Self.isLoopback(context.clientAddress) {
            throw Problem(
                .forbidden, slug: "metrics-loopback-only", title: "Metrics are served to loopback only",
                detail: "Without METRICS_TOKEN, /metrics answers only clients on the same host."
            )
        }
        return Response(
            status: .ok,
            headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
            body: .init(
                byteBuffer: {
                    beforeScrape(); return ByteBuffer(bytes: metrics.emitToBuffer())
                }())
        )
    }

    /// `GET /openapi.yaml`: the API contract this server implements.
    @Sendable func contract(_ request: Request, context: AppRequestContext) async throws -> Response {
        Response(
            status: .ok,
            headers: [.contentType: "application/yaml; charset=utf-8"],
            body: .init(byteBuffer: openAPIDocument)
        )
    }

    static func isLoopback(_ address: String?) -> Bool {
        guard let address else { return false }
        return address == "::1" || address.hasPrefix("127.") || address.hasPrefix("::ffff:127.")
    }
}

struct HealthStatus: ResponseEncodable {
    let status: String
}
