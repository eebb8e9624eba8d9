import Configuration
import DatabaseLink
import EmbeddedFiles
import Foundation
import HTTPAPI
import Logging
import Metrics
import OTel
import Prometheus
import ServiceLifecycle
import Tracing

/// Process-wide set-up shared by the subcommands: configuration, logging, metrics, and the
/// database (the configured server, or an embedded cluster that lives as long as the command).
enum ServerEnvironment {
    /// Reads `AppConfiguration` from the environment; the command line may override host and port.
    static func configuration(host: String?, port: Int?) throws -> AppConfiguration {
        var configuration = try AppConfiguration(reader: ConfigReader(providers: [EnvironmentVariablesProvider()]))
        if let host { configuration.host = host }
        if let port { configuration.port = port }
        configuration.builtInFiles = BuiltInFiles(base64: EmbeddedFiles.all)
        return configuration
    }

    /// JSON log lines on standard output at the configured level; with tracing on, each line
    /// written inside a span carries its `trace_id` and `span_id` (swift-otel's metadata provider).
    static func bootstrapLogging(level: Logger.Level, output: FileHandle = .standardOutput) -> Logger {
        LoggingSystem.bootstrap(
            { label, provider in
                var handler = JSONLogHandler(label: label, metadataProvider: provider, output: output)
                handler.logLevel = level
                return handler
            }, metadataProvider: OTel.makeLoggingMetadataProvider())
        return Logger(label: "data4help")
    }

    /// OpenTelemetry traces (swift-otel), when the standard variables ask for them:
    /// `OTEL_TRACES_EXPORTER=otlp`, or an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`,
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) without `OTEL_TRACES_EXPORTER=none`; never with
    /// `OTEL_SDK_DISABLED=true`. The rest — protocol (`http/protobuf`, `http/json`), headers,
    /// sampler, batching, `OTEL_SERVICE_NAME` — is swift-otel's reading of the same variables.
    /// Returns the exporter's service (run it beside the server), or nil: tracing stays off and
    /// costs a statement or a request one atomic load.
    static func bootstrapTracing(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> (any Service)? {
        if environment["OTEL_SDK_DISABLED"]?.lowercased() == "true" { return nil }
        let exporter = environment["OTEL_TRACES_EXPORTER"]?.lowercased()
        let endpoint = environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] ?? environment["OTEL_EXPORTER_OTLP_ENDPOINT"]
        guard exporter == "otlp" || (exporter == nil && endpoint != nil) else { return nil }
        // Only OTLP over HTTP is built (the OTLPHTTP trait: gRPC would build grpc-swift).
        for key in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] where environment[key]?.lowercased() == "grpc" {
            throw ConfigurationError("\(key)=grpc: this build exports traces over HTTP only (http/protobuf or http/json)")
        }
        var configuration = OTel.Configuration.default
        configuration.serviceName = "data4help"
        configuration.logs.enabled = false  // logs stay JSON lines on standard output
        configuration.metrics.enabled = false  // metrics stay Prometheus's (/metrics)
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.protocol = .httpProtobuf  // the default; the variables may choose http/json
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(backend.factory)
        TraceSpans.enable()
        return backend.service
    }

    /// Prometheus as the metrics backend; names like `hb.requests` become `hb_requests`.
    static func bootstrapMetrics() -> PrometheusCollectorRegistry {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetrics.factory(registry: registry))
        return registry
    }

    /// Runs the body with the URL of the database to use: `DATABASE_URL`, or an embedded cluster
    /// under `DATA_DIR/postgres` started for the body and stopped after it.
    static func withDatabase<T>(
        _ configuration: AppConfiguration, logger: Logger, _ body: (DatabaseURL) async throws -> T
    ) async throws -> T {
        if let url = configuration.databaseURL {
            return try await body(url)
        }
        let directory = URL(fileURLWithPath: configuration.dataDirectory).appendingPathComponent("postgres")
        let cluster = try await EmbeddedPostgres.start(.init(directory: directory), logger: logger)
        do {
            let url = try await cluster.database(named: "data4help", logger: logger)
            let result = try await body(url)
            try await cluster.stop()
            return result
        } catch {
            try? await cluster.stop()
            throw error
        }
    }
}
