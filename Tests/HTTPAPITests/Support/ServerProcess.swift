import DatabaseLink
import DatabaseTestSupport
import ExternalPrograms
import Foundation

/// What tests need to run the real `data4help` executable as a separate process.
enum ServerProcess {
    /// The `data4help` executable built next to this test bundle, or `DATA4HELP_EXECUTABLE`
    /// (`make drills` points it at the release build for the load run).
    static var executable: URL {
        if let path = ProcessInfo.processInfo.environment["DATA4HELP_EXECUTABLE"], !path.isEmpty { return URL(fileURLWithPath: path) }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("data4help")
    }

    /// `DATABASE_URL` for a test database.
    static func connectionString(_ url: DatabaseURL) -> String {
        let password = url.password.map { ":" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0) } ?? ""
        return "postgres://\(url.username)\(password)@\(url.host):\(url.port)/\(url.database)?sslmode=disable"
    }

    /// A `data4help` process with `arguments` on `database`: the test environment (migrations,
    /// pages, contract) plus `extra`. Its standard error goes to a log file of its own (see
    /// `ChildProcess`: never the test process's output). `output`: a file for its standard
    /// output (its JSON log lines), appended to; by default dropped.
    static func launch(
        _ arguments: [String] = ["serve"], database: DatabaseURL, environment extra: [String: String], output: URL? = nil
    ) async throws -> ChildProcess {
        try await ChildProcess.start(
            executable, arguments,
            environment: [
                "DATABASE_URL": connectionString(database), "LOG_LEVEL": "error",
                "MIGRATIONS_DIR": TestPostgres.migrationsDirectory.path,
                "PAGES_DIR": TestPostgres.repositoryRoot.appendingPathComponent("Sources/HTTPAPI/Pages/Templates").path,
                "OPENAPI_PATH": TestPostgres.repositoryRoot.appendingPathComponent("openapi/data4help.yaml").path,
                "MAIL_PICKUP_DIR": Mailbox.directory.path,
            ].merging(extra) { $1 },
            output: output, error: logFile(named: "data4help"))
    }

    /// A fresh file's name in the temporary directory, for a child's output.
    static func logFile(named name: String) -> URL {
        URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("\(name)-\(UUID().uuidString.prefix(8)).log")
    }
}
