import ArgumentParser
import HTTPAPI
import Hummingbird
import Logging
import ServiceLifecycle
import UnixSignals

/// `data4help serve`: migrate, then serve HTTP until SIGTERM/SIGINT, then shut down gracefully.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Run the HTTP server.")

    @Option(help: "Address to listen on (overrides HOST).")
    var host: String?

    @Option(help: "Port to listen on (overrides PORT).")
    var port: Int?

    func run() async throws {
        let configuration = try ServerEnvironment.configuration(host: host, port: port)
        let logger = ServerEnvironment.bootstrapLogging(level: configuration.logLevel)
        let metrics = ServerEnvironment.bootstrapMetrics()
        let tracing = try ServerEnvironment.bootstrapTracing()
        try await StartupFailure.reporting {
            try await ServerEnvironment.withDatabase(configuration, logger: logger) { databaseURL in
                let roster = ServiceRoster()
                let app = try buildApplication(
                    configuration: configuration, databaseURL: databaseURL, metrics: metrics, roster: roster, logger: logger)
                // SIGTERM/SIGINT: stop accepting, let in-flight requests finish. Shutdown is bounded
                // (below Kubernetes' 30 s grace period): after 20 s the services are cancelled, and
                // after 5 more the process ends whatever still runs.
                // The exporter's service first: it stops last and sends the spans of the shutdown.
                // The watch last: its graceful shutdown comes first, and from then on it names, every
                // 5 s, the services a slow shutdown still waits for.
                let services: [any Service] =
                    (tracing.map { [$0] } ?? []) + [roster.watching(app, as: "Application"), ShutdownWatch(roster: roster, logger: logger)]
                var group = ServiceGroupConfiguration(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
                group.maximumGracefulShutdownDuration = .seconds(20)
                group.maximumCancellationDuration = .seconds(5)
                try await ServiceGroup(configuration: group).run()
            }
        }
    }
}
