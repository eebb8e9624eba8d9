import DatabaseLink
import Foundation

/// Files compiled into the executable, by their path in the package (base64; see the
/// `EmbeddedFiles` module, which the executable hands over as `AppConfiguration.builtInFiles`).
package struct BuiltInFiles: Sendable {
    let table: [String: String]

    package init(base64 table: [String: String]) {
        self.table = table
    }

    /// The file at this path of the package, if it is built in.
    func file(_ path: String) -> Data? {
        table[path].flatMap { Data(base64Encoded: $0) }
    }

    /// The built-in files directly in this directory of the package, by file name.
    func directory(_ path: String) -> [String: Data] {
        let prefix = path.hasSuffix("/") ? path : path + "/"
        var files: [String: Data] = [:]
        for (key, value) in table where key.hasPrefix(prefix) {
            let name = String(key.dropFirst(prefix.count))
            guard !name.contains("/"), let data = Data(base64Encoded: value) else { continue }
            files[name] = data
        }
        return files
    }
}

/// The server's own files — migrations, the contract, the page templates and scripts — as
/// compiled into the executable (`builtIn`), or read from disk where a `*_DIR`/`*_PATH` setting
/// names a directory or file (development: edit a template, restart). With neither (a server
/// built into a test or a bench), the repository's paths relative to the working directory.
package enum ServerFiles {
    static let migrationsPath = "migrations", contractPath = "openapi/data4help.yaml", pagesPath = "Sources/HTTPAPI/Pages/Templates"

    /// The migrations: `MIGRATIONS_DIR`'s `*.sql`, else the built-in `migrations/`.
    package static func migrations(directory: String?, builtIn: BuiltInFiles?) throws -> MigrationSet {
        guard directory == nil, let builtIn else { return try MigrationSet(directory: URL(fileURLWithPath: directory ?? migrationsPath)) }
        let files = builtIn.directory(migrationsPath).filter { $0.key.hasSuffix(".sql") }
        guard !files.isEmpty else { throw MigrationError.unreadableDirectory("(built-in migrations)") }
        return try MigrationSet(files: files.map { try MigrationFile(fileName: $0.key, contents: $0.value) })
    }

    /// The OpenAPI document: `OPENAPI_PATH`, else the built-in `openapi/data4help.yaml`.
    static func contract(path: String?, builtIn: BuiltInFiles?) throws -> Data {
        let document =
            if path == nil, let builtIn { builtIn.file(contractPath) } else { FileManager.default.contents(atPath: path ?? contractPath) }
        guard let document else {
            throw ConfigurationError("cannot read the OpenAPI document at OPENAPI_PATH (\(path ?? (builtIn == nil ? contractPath : "built in")))")
        }
        return document
    }

    /// The pages' files by name: `PAGES_DIR`'s, else the built-in templates and scripts.
    static func pages(directory: String?, builtIn: BuiltInFiles?) throws -> [String: Data] {
        if directory == nil, let builtIn { return builtIn.directory(pagesPath) }
        let directory = directory ?? pagesPath
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) where !name.hasPrefix(".") {
            files[name] = try Data(contentsOf: URL(fileURLWithPath: directory).appendingPathComponent(name))
        }
        return files
    }
}
