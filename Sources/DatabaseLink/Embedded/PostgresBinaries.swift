import Foundation

/// Where the machine's `initdb`, `pg_ctl` and `pg_basebackup` are: first the `PATH`, then the newest
/// `/usr/lib/postgresql/<version>/bin` (Debian puts them there, not on the `PATH`).
struct PostgresBinaries: Sendable {
    let initdb: String
    let pgCtl: String
    let pgBasebackup: String

    static func locate(environment: [String: String] = ProcessInfo.processInfo.environment) throws(EmbeddedPostgresError) -> PostgresBinaries {
        let fileManager = FileManager.default
        var directories = (environment["PATH"] ?? "").split(separator: ":").map(String.init)
        let debianRoot = "/usr/lib/postgresql"
        let versions = ((try? fileManager.contentsOfDirectory(atPath: debianRoot)) ?? [])
            .compactMap { name in Int(name).map { (name, $0) } }
            .sorted { $0.1 > $1.1 }
        directories += versions.map { "\(debianRoot)/\($0.0)/bin" }
        for directory in directories {
            let initdb = "\(directory)/initdb", pgCtl = "\(directory)/pg_ctl"
            if fileManager.isExecutableFile(atPath: initdb), fileManager.isExecutableFile(atPath: pgCtl) {
                // The other tools sit beside the real `initdb` (the PATH may hold symlinks to a few).
                let tools = URL(fileURLWithPath: initdb).resolvingSymlinksInPath().deletingLastPathComponent().path
                return PostgresBinaries(initdb: initdb, pgCtl: pgCtl, pgBasebackup: "\(tools)/pg_basebackup")
            }
        }
        throw .binariesNotFound
    }
}
