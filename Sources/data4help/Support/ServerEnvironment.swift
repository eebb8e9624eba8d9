import Configuration
import DatabaseLink
import EmbeddedFiles
import Foundation
import HTTPAPI
import Logging
import Metrics
import Prometheus

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

    /// JSON log lines on standard output at the configured level.
    static func bootstrapLogging(level: Logger.Level) -> Logger {
        LoggingSystem.bootstrap { label in
            var handler = JSONLogHandler(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "data4help")
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
