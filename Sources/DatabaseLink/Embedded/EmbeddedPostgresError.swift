/// Why the embedded PostgreSQL cluster could not be started.
package enum EmbeddedPostgresError: Error, CustomStringConvertible {
    case binariesNotFound
    case noUnprivilegedUser(String)
    case commandFailed(String)
    case unreadableState(String)

    package var description: String {
        switch self {
        case .binariesNotFound:
            "initdb and pg_ctl were not found on PATH or in /usr/lib/postgresql/*/bin: install PostgreSQL (apt-get install postgresql) or set DATABASE_URL"
        case .noUnprivilegedUser(let user):
            "running as root, but there is no '\(user)' user to run PostgreSQL as (initdb refuses root)"
        case .commandFailed(let message):
            "embedded PostgreSQL: \(message)"
        case .unreadableState(let message):
            "embedded PostgreSQL: \(message)"
        }
    }
}
