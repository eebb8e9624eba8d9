import ArgumentParser
import HTTPAPI
import Hummingbird
import Logging

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
        try await StartupFailure.reporting {
            try await ServerEnvironment.withDatabase(configuration, logger: logger) { databaseURL in
                let app = try buildApplication(configuration: configuration, databaseURL: databaseURL, metrics: metrics, logger: logger)
                try await app.runService()
            }
        }
    }
}
