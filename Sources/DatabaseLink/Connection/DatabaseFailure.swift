import PostgresNIO

/// What went wrong in the database, reduced to the cases callers act on.
///
/// `PSQLError`'s own description deliberately hides details; this keeps the SQLSTATE class
/// and the constraint name so that, say, a unique violation becomes a 409 upstream without
/// any SQL text or bound value reaching a response or a log.
package enum DatabaseFailure: Error, Equatable {
    /// SQLSTATE 23505, with the violated constraint's name.
    case uniqueViolation(constraint: String)
    /// SQLSTATE 23503.
    case foreignKeyViolation(constraint: String)
    /// SQLSTATE 23514 or 22xxx: the database refused a value the application let through.
    case invalidData(constraint: String?)

    /// Classifies a postgres-nio error; nil when it is not one of the cases above.
    package init?(_ error: any Error) {
        guard let psql = error as? PSQLError, let sqlState = psql.serverInfo?[.sqlState] else { return nil }
        let constraint = psql.serverInfo?[.constraintName]
        switch sqlState {
        case "23505": self = .uniqueViolation(constraint: constraint ?? "")
        case "23503": self = .foreignKeyViolation(constraint: constraint ?? "")
        case "23514": self = .invalidData(constraint: constraint)
        case let state where state.hasPrefix("22"): self = .invalidData(constraint: constraint)
        default: return nil
        }
    }

    /// True for `.uniqueViolation`, whatever the constraint.
    package var isUniqueViolation: Bool {
        if case .uniqueViolation = self { return true }
        return false
    }
}
