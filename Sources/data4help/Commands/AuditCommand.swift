import ArgumentParser
import DatabaseLink
import Foundation
import HTTPAPI
import Logging

/// `data4help audit verify`: checks the aggregate audit log's hash chain.
struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit", abstract: "The aggregate queries' audit log.", subcommands: [Verify.self]
    )

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify",
            abstract: "Recompute every hash of the audit chain; exit 1 at the first row that does not hold.",
            discussion:
                "Prints the number of rows and the hash of the last one: keep it, so that a later check can tell that no row was cut off the end."
        )

        func run() async throws {
            let configuration = try ServerEnvironment.configuration(host: nil, port: nil)
            let logger = ServerEnvironment.bootstrapLogging(level: configuration.logLevel)
            let verification = try await ServerEnvironment.withDatabase(configuration, logger: logger) { url in
                let database = Database(configuration: url.clientConfiguration(maximumConnections: 1), logger: logger)
                return try await database.whileRunning { try await AuditChain.verify(database: database) }
            }
            let head = verification.head.map { String(format: "%02x", $0) }.joined()
            if let broken = verification.firstBrokenRow {
                print("audit chain BROKEN at row \(broken) (\(verification.rows) rows before it hold; last good hash \(head))")
                throw ExitCode(1)
            }
            print("audit chain intact: \(verification.rows) rows, head \(head)")
        }
    }
}
