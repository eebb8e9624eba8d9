import Crypto
import Foundation

/// One plain-SQL migration file, `NNNN_description.sql`, with the checksum of its exact bytes.
package struct MigrationFile: Sendable, Equatable {
    package let version: Int
    package let fileName: String
    package let sql: String
    /// Hex SHA-256 of the file's bytes; an applied file whose checksum changes is refused.
    package let checksum: String

    package init(fileName: String, contents: Data) throws(MigrationError) {
        let digits = fileName.prefix(while: \.isNumber)
        guard !digits.isEmpty, let version = Int(digits), version > 0,
            fileName.dropFirst(digits.count).first == "_", fileName.hasSuffix(".sql")
        else { throw .invalidFileName(fileName) }
        guard let sql = String(data: contents, encoding: .utf8) else { throw .invalidFileName(fileName) }
        self.version = version
        self.fileName = fileName
        self.sql = sql
        self.checksum = SHA256.hash(data: contents).map { String(format: "%02x", $0) }.joined()
    }
}

/// The ordered migrations found in a directory.
package struct MigrationSet: Sendable {
    package let files: [MigrationFile]

    package init(files: [MigrationFile]) throws(MigrationError) {
        let sorted = files.sorted { $0.version < $1.version }
        for (previous, next) in zip(sorted, sorted.dropFirst()) where previous.version == next.version {
            throw .duplicateVersion(next.version)
        }
        self.files = sorted
    }

    /// Reads every `*.sql` file of the directory (other files are ignored).
    package init(directory: URL) throws(MigrationError) {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw .unreadableDirectory(directory.path)
        }
        var files: [MigrationFile] = []
        for name in names where name.hasSuffix(".sql") {
            guard let contents = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path) else {
                throw .unreadableDirectory(directory.path)
            }
            files.append(try MigrationFile(fileName: name, contents: contents))
        }
        try self.init(files: files)
    }

    /// The highest version; the schema is current when it is applied.
    package var latestVersion: Int { files.last?.version ?? 0 }
}
