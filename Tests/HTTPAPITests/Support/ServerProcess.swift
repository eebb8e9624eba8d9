import DatabaseLink
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
}
