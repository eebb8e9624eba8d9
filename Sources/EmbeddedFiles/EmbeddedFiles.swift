import Foundation

/// The files the server reads at start-up, compiled into the executable by the `EmbedFiles` build
/// plugin (the table is generated at build time from the package's `migrations/`,
/// `openapi/data4help.yaml` and `Sources/HTTPAPI/Pages/Templates/`). A `*_DIR`/`*_PATH` setting
/// reads a directory or file from disk instead, for development.
package enum EmbeddedFiles {
    /// The file at this path of the package, if it is embedded.
    package static func file(_ path: String) -> Data? {
        table[path].flatMap { Data(base64Encoded: $0) }
    }

    /// The embedded files directly in this directory of the package, by file name.
    package static func directory(_ path: String) -> [String: Data] {
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
