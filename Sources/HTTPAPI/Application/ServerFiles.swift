import DatabaseLink
import EmbeddedFiles
import Foundation

/// The server's own files — migrations, the contract, the page templates and scripts — as
/// compiled into the executable (`EmbeddedFiles`), or read from disk where a `*_DIR`/`*_PATH`
/// setting names a directory or file (development: edit a template, reload).
package enum ServerFiles {
    /// The migrations: `MIGRATIONS_DIR`'s `*.sql`, else the compiled-in `migrations/`.
    package static func migrations(directory: String?) throws -> MigrationSet {
        if let directory { return try MigrationSet(directory: URL(fileURLWithPath: directory)) }
        let files = EmbeddedFiles.directory("migrations").filter { $0.key.hasSuffix(".sql") }
        guard !files.isEmpty else { throw MigrationError.unreadableDirectory("(compiled-in migrations)") }
        return try MigrationSet(files: files.map { try MigrationFile(fileName: $0.key, contents: $0.value) })
    }

    /// The OpenAPI document: `OPENAPI_PATH`, else the compiled-in `openapi/data4help.yaml`.
    static func contract(path: String?) throws -> Data {
        guard let document = path.map({ FileManager.default.contents(atPath: $0) }) ?? EmbeddedFiles.file("openapi/data4help.yaml") else {
            throw ConfigurationError("cannot read the OpenAPI document at OPENAPI_PATH (\(path ?? "compiled in"))")
        }
        return document
    }

    /// The pages' files by name: `PAGES_DIR`'s, else the compiled-in templates and scripts.
    static func pages(directory: String?) throws -> [String: Data] {
        guard let directory else { return EmbeddedFiles.directory("Sources/HTTPAPI/Pages/Templates") }
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) where !name.hasPrefix(".") {
            files[name] = try Data(contentsOf: URL(fileURLWithPath: directory).appendingPathComponent(name))
        }
        return files
    }
}
