import ArgumentParser
import DatabaseLink
import Foundation
import HTTPAPI
import Logging

/// `data4help seed`: a synthetic population for aggregate queries (and their benchmark).
struct SeedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seed",
        abstract: "Add a synthetic population: individuals with age, sex, home area and daily heart-rate and step rollups."
    )

    @Option(help: "Individuals to add.") var individuals = 10_000
    @Option(help: "Days of history each, ending today.") var days = 365
    @Option(help: "Prefix of the seeded accounts' emails and fiscal codes (seed again with another to add more).") var tag = "seed"
    @Flag(
        help:
            "Instead: demo accounts to sign in with (an organisation, an individual with a week of data and a request waiting) and a population of 3,000 for aggregates."
    )
    var demo = false
    @Option(help: "With --demo: the server's address to print (default: PUBLIC_BASE_URL, else http://HOST:PORT).") var server: String?

    func validate() throws {
        guard individuals >= 1, (1...3650).contains(days) else { throw ValidationError("--individuals must be ≥ 1 and --days 1…3650") }
        guard tag.count <= 12, tag.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            throw ValidationError("--tag must be 1–12 letters or digits")
        }
    }

    func run() async throws {
        let configuration = try ServerEnvironment.configuration(host: nil, port: nil)
        let logger = ServerEnvironment.bootstrapLogging(level: configuration.logLevel)
        let migrations = try ServerFiles.migrations(directory: configuration.migrationsDirectory, builtIn: configuration.builtInFiles)
        try await StartupFailure.reporting {
            try await ServerEnvironment.withDatabase(configuration, logger: logger) { url in
                let database = Database(configuration: url.clientConfiguration(maximumConnections: 2), logger: logger)
                try await database.whileRunning {
                    _ = try await Migrator(database: database, migrations: migrations).migrate()
                    if demo {
                        try await DemoAccounts(database: database, logger: logger).seed()
                        let base = server ?? configuration.baseURL
                        print(DemoAccounts.summary(base: base.hasSuffix("/") ? String(base.dropLast()) : base))
                        return
                    }
                    let started = ContinuousClock.now
                    let bar = ProgressBar(total: individuals, label: "seeding")
                    try await PopulationSeeder(database: database).seed(individuals: individuals, days: days, tag: tag, progress: bar.update)
                    bar.finish()
                    let elapsed = ContinuousClock.now - started
                    print(
                        "seeded \(individuals) individuals × \(days) days (heart rate and steps) in \(elapsed.formatted(.units(allowed: [.seconds], fractionalPart: .show(length: 1))))"
                    )
                }
            }
        }
    }
}

/// A one-line progress bar on standard error.
struct ProgressBar {
    let total: Int
    let label: String

    func update(_ done: Int) {
        let width = 30
        let filled = total == 0 ? width : width * done / total
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        FileHandle.standardError.write(Data("\r\(label) [\(bar)] \(done)/\(total)".utf8))
    }

    func finish() {
        FileHandle.standardError.write(Data("\n".utf8))
    }
}
