import DatabaseLink
import Foundation

/// What tests need to run the real `data4help` executable as a separate process.
enum ServerProcess {
    /// The `data4help` executable built next to this test bundle.
    static var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("data4help")
    }

    /// `DATABASE_URL` for a test database.
    static func connectionString(_ url: DatabaseURL) -> String {
        let password = url.password.map { ":" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0) } ?? ""
        return "postgres://\(url.username)\(password)@\(url.host):\(url.port)/\(url.database)?sslmode=disable"
    }
}
