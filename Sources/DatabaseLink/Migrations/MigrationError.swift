/// Why the schema could not be brought up to date. Every case is fatal at start-up.
package enum MigrationError: Error, Equatable, CustomStringConvertible {
    /// A `.sql` file not named `NNNN_description.sql`, or not UTF-8.
    case invalidFileName(String)
    /// Two files share one version number.
    case duplicateVersion(Int)
    /// The migrations directory could not be read.
    case unreadableDirectory(String)
    /// A file was changed after it had been applied: history must not be rewritten.
    case editedAfterApplying(fileName: String)
    /// The database records a migration that no file describes any more.
    case missingFile(version: Int, fileName: String)
    /// The file's SQL failed; nothing of it was kept.
    case failed(fileName: String, reason: String)

    package var description: String {
        switch self {
        case .invalidFileName(let name):
            "migration file \(name) must be named NNNN_description.sql and be UTF-8"
        case .duplicateVersion(let version):
            "two migration files have version \(version)"
        case .unreadableDirectory(let path):
            "cannot read the migrations directory \(path)"
        case .editedAfterApplying(let name):
            "migration \(name) was edited after it was applied (checksum differs); add a new migration instead"
        case .missingFile(let version, let name):
            "the database has migration \(version) (\(name)) applied but there is no such file"
        case .failed(let name, let reason):
            "migration \(name) failed and was rolled back: \(reason)"
        }
    }
}
