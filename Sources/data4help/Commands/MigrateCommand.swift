import ArgumentParser
import DatabaseLink
import Foundation
import HTTPAPI
import Logging

/// `data4help migrate`: apply pending migrations and exit.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "migrate", abstract: "Apply pending database migrations and exit.")

    func run() async throws {
        let configuration = try ServerEnvironment.configuration(host: nil, port: nil)
        let logger = ServerEnvironment.bootstrapLogging(level: configuration.logLevel)
        let migrations = try ServerFiles.migrations(directory: configuration.migrationsDirectory, builtIn: configuration.builtInFiles)
        try await StartupFailure.reporting {
            try await ServerEnvironment.withDatabase(configuration, logger: logger) { url in
                let database = Database(configuration: url.clientConfiguration(maximumConnections: 2), logger: logger)
                try await database.whileRunning {
                    let report = try await Migrator(database: database, migrations: migrations).migrate()
                    logger.info(
                        "migrations done",
                        metadata: [
                            "applied": "\(report.applied.joined(separator: ","))", "previously": "\(report.alreadyApplied)",
                        ])
                }
            }
        }
    }
}
