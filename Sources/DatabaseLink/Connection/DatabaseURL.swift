import Foundation
import PostgresNIO

/// A parsed `postgres://user:password@host:port/database?sslmode=…` connection string.
///
/// Only the parts the server needs are understood; anything else is an error at start-up
/// rather than a silently ignored setting.
package struct DatabaseURL: Sendable, Equatable {
    package enum TLSMode: String, Sendable {
        case disable, prefer, require
    }

    package var host: String
    package var port: Int
    package var username: String
    package var password: String?
    package var database: String
    package var tlsMode: TLSMode

    package init(host: String, port: Int, username: String, password: String?, database: String, tlsMode: TLSMode = .disable) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.tlsMode = tlsMode
    }

    /// Parses a libpq-style URL. The error names what is wrong, never the password.
    package init(parsing string: String) throws(DatabaseURLError) {
        guard let components = URLComponents(string: string),
            let scheme = components.scheme, ["postgres", "postgresql"].contains(scheme)
        else { throw DatabaseURLError("DATABASE_URL must look like postgres://user:password@host:port/database") }
        guard let host = components.host, !host.isEmpty else { throw DatabaseURLError("DATABASE_URL has no host") }
        guard let user = components.user, !user.isEmpty else { throw DatabaseURLError("DATABASE_URL has no user name") }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty else { throw DatabaseURLError("DATABASE_URL has no database name") }
        var tlsMode = TLSMode.prefer
        for item in components.queryItems ?? [] where item.name == "sslmode" {
            switch item.value {
            case "disable", "allow": tlsMode = .disable
            case "prefer": tlsMode = .prefer
            case "require", "verify-ca", "verify-full": tlsMode = .require
            default: throw DatabaseURLError("DATABASE_URL has an unknown sslmode")
            }
        }
        self.init(
            host: host,
            port: components.port ?? 5432,
            username: user.removingPercentEncoding ?? user,
            password: components.password.map { $0.removingPercentEncoding ?? $0 },
            database: database.removingPercentEncoding ?? database,
            tlsMode: tlsMode
        )
    }

    /// The same server, another database on it (tests clone databases this way).
    package func with(database: String) -> DatabaseURL {
        var copy = self
        copy.database = database
        return copy
    }

    /// The URL as a string, with the password percent-encoded. Never log it.
    package var urlString: String {
        var components = URLComponents()
        components.scheme = "postgres"
        components.host = host
        components.port = port
        components.user = username
        components.password = password
        components.path = "/" + database
        components.queryItems = [URLQueryItem(name: "sslmode", value: tlsMode.rawValue)]
        return components.string ?? ""
    }

    /// The postgres-nio client configuration for this URL.
    package func clientConfiguration(maximumConnections: Int) -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS
        switch tlsMode {
        case .disable: tls = .disable
        case .prefer: tls = .prefer(.makeClientConfiguration())
        case .require: tls = .require(.makeClientConfiguration())
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: tls
        )
        configuration.options.maximumConnections = maximumConnections
        configuration.options.minimumConnections = 1
        return configuration
    }
}

/// A malformed `DATABASE_URL`; the message never contains the URL itself (it may hold a password).
package struct DatabaseURLError: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
