import Crypto
import Foundation
import Logging
import PostgresNIO

#if canImport(Glibc)
import Glibc
#endif

/// A private PostgreSQL cluster under a directory of ours, started with the machine's own
/// `initdb`/`pg_ctl` and listening on a free loopback port.
///
/// Used by `data4help serve` when `DATABASE_URL` is not set, and by the test harness.
/// The cluster's password is random, kept in `<directory>/password` (mode 0600), and the server
/// accepts only password (SCRAM) connections on 127.0.0.1.
package struct EmbeddedPostgres: Sendable {
    package struct Options: Sendable {
        /// Holds `cluster/` (the data directory), `password` and `postgres.log`.
        package var directory: URL
        /// False for throwaway test clusters: no fsync, no full-page writes.
        package var durable: Bool = true
        /// Extra `postgres -c name=value` settings.
        package var settings: [String: String] = [:]
        /// The account to run PostgreSQL as when this process is root.
        package var unprivilegedUser: String = "postgres"

        package init(directory: URL) {
            self.directory = directory
        }
    }

    /// URL of the cluster's `postgres` maintenance database, for role `data4help`.
    package let maintenanceURL: DatabaseURL
    /// Whether this value started the server (and so stops it); false when it was already running.
    package let startedServer: Bool
    /// The server's log (`postgres.log` beside the cluster).
    package let logFile: URL
    /// The `postgres` options it was started with (same port on a restart).
    private let serverOptions: String
    private let runner: CommandRunner
    private let binaries: PostgresBinaries
    private let clusterDirectory: URL

    static let role = "data4help"

    /// Initialises the cluster when the directory is new, then starts it (or joins it if running).
    package static func start(_ options: Options, logger: Logger) async throws -> EmbeddedPostgres {
        try await start(options, logger: logger) { cluster, passwordFile, runner, binaries in
            try await initialise(cluster: cluster, passwordFile: passwordFile, runner: runner, binaries: binaries, logger: logger)
        }
    }

    /// A hot standby of `primary`, streaming its WAL: when the directory is new, the cluster is
    /// copied with `pg_basebackup -R` (which writes `standby.signal` and the `primary_conninfo`
    /// to follow it), then started on its own port; later calls start the existing copy. The
    /// copy's roles and password are the primary's.
    package static func startReplica(of primary: EmbeddedPostgres, _ options: Options, logger: Logger) async throws -> EmbeddedPostgres {
        let source = primary.maintenanceURL
        return try await start(options, logger: logger) { cluster, passwordFile, runner, binaries in
            let password = source.password ?? ""
            try Data(password.utf8).write(to: passwordFile)
            try setPermissions(passwordFile, mode: 0o600, owner: runner.runAsUser)
            // libpq reads the password from a pgpass file, never from the command line.
            let passFile = passwordFile.deletingLastPathComponent().appendingPathComponent("pgpass")
            try Data("\(source.host):\(source.port):*:\(source.username):\(password)\n".utf8).write(to: passFile)
            try setPermissions(passFile, mode: 0o600, owner: runner.runAsUser)
            do {
                try await runner.run(
                    binaries.pgBasebackup,
                    [
                        "-d", "host=\(source.host) port=\(source.port) user=\(source.username) passfile=\(passFile.path)",
                        "-D", cluster.path, "-R", "-X", "stream", "--checkpoint=fast",
                    ])
            } catch {
                throw EmbeddedPostgresError.commandFailed("pg_basebackup failed: \(error)")
            }
            logger.info("copied the primary into a streaming replica", metadata: ["directory": "\(cluster.path)"])
        }
    }

    private static func start(
        _ options: Options, logger: Logger,
        create: @escaping @Sendable (_ cluster: URL, _ passwordFile: URL, CommandRunner, PostgresBinaries) async throws -> Void
    ) async throws -> EmbeddedPostgres {
        let binaries = try PostgresBinaries.locate()
        let requested = options.directory.standardizedFileURL
        let runAsUser = geteuid() == 0 ? options.unprivilegedUser : nil
        try FileManager.default.createDirectory(at: requested, withIntermediateDirectories: true)
        var directory = requested
        if let runAsUser { directory = try await prepareForUnprivilegedUser(requested, user: runAsUser, logger: logger) }
        let runner = CommandRunner(runAsUser: runAsUser, workingDirectory: directory)
        let cluster = directory.appendingPathComponent("cluster")
        let passwordFile = directory.appendingPathComponent("password")

        if !FileManager.default.fileExists(atPath: cluster.appendingPathComponent("PG_VERSION").path) {
            try await create(cluster, passwordFile, runner, binaries)
        }
        guard let password = try? String(contentsOf: passwordFile, encoding: .utf8) else {
            throw EmbeddedPostgresError.unreadableState("cannot read \(passwordFile.path)")
        }
        let (port, started, serverOptions): (Int, Bool, String)
        if await runner.succeeds(binaries.pgCtl, ["-D", cluster.path, "status"]) {
            (port, started, serverOptions) = (try runningPort(cluster: cluster), false, "")
        } else {
            let reservation = try LoopbackPortReservation.forImmediateBind()
            port = reservation.port
            var settings = ["listen_addresses": "127.0.0.1", "unix_socket_directories": "''"]
            if !options.durable {
                settings.merge(["fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"]) { $1 }
            }
            settings.merge(options.settings) { $1 }
            let arguments = (["-p \(port)"] + settings.sorted { $0.key < $1.key }.map { "-c \($0.key)=\($0.value)" })
                .joined(separator: " ")
            do {
                try await runner.run(
                    binaries.pgCtl,
                    [
                        "-D", cluster.path, "-l", directory.appendingPathComponent("postgres.log").path,
                        "-w", "-t", "120", "-o", arguments, "start",
                    ])
            } catch {
                throw EmbeddedPostgresError.commandFailed("pg_ctl start failed (see \(directory.path)/postgres.log): \(error)")
            }
            withExtendedLifetime(reservation) {}  // `-w`: PostgreSQL listens, the port is its own
            (started, serverOptions) = (true, arguments)
        }
        logger.info("embedded PostgreSQL running", metadata: ["port": "\(port)", "directory": "\(directory.path)"])
        return EmbeddedPostgres(
            maintenanceURL: DatabaseURL(
                host: "127.0.0.1", port: port, username: role,
                password: password.trimmingCharacters(in: .whitespacesAndNewlines), database: "postgres"
            ),
            startedServer: started,
            logFile: directory.appendingPathComponent("postgres.log"),
            serverOptions: serverOptions,
            runner: runner,
            binaries: binaries,
            clusterDirectory: cluster
        )
    }

    /// Creates the database unless it exists, and returns its URL.
    package func database(named name: String, logger: Logger) async throws -> DatabaseURL {
        let configuration = PostgresConnection.Configuration(
            host: maintenanceURL.host, port: maintenanceURL.port, username: maintenanceURL.username,
            password: maintenanceURL.password, database: maintenanceURL.database, tls: .disable
        )
        // Identifiers cannot be bound; the name is checked to be a plain identifier first.
        guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
            throw EmbeddedPostgresError.commandFailed("database name must be a plain identifier")
        }
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        do {
            let existing = try await connection.query("SELECT 1 FROM pg_database WHERE datname = \(name)", logger: logger).collect()
            if existing.isEmpty {
                _ = try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: logger)
            }
            try await connection.close()
        } catch {
            try? await connection.close()
            throw error
        }
        return maintenanceURL.with(database: name)
    }

    /// Stops the server if this value started it: `fast` waits for clients to disconnect cleanly,
    /// `immediate` (throwaway test clusters) does not.
    package func stop(immediately: Bool = false) async throws {
        guard startedServer else { return }
        try await runner.run(binaries.pgCtl, ["-D", clusterDirectory.path, "-m", immediately ? "immediate" : "fast", "-w", "stop"])
    }

    /// Stops the server (`fast`: clients are disconnected), waits, and starts it again with the
    /// same options and port: for drills of a database restart.
    package func restart(after pause: Duration) async throws {
        guard startedServer else { return }
        try await runner.run(binaries.pgCtl, ["-D", clusterDirectory.path, "-m", "fast", "-w", "stop"])
        try await Task.sleep(for: pause)
        try await runner.run(
            binaries.pgCtl,
            [
                "-D", clusterDirectory.path, "-l", logFile.path, "-w", "-t", "120", "-o", serverOptions, "start",
            ])
    }

    /// Stops the server at once, synchronously and without starting a program: for `atexit`
    /// handlers of throwaway test clusters. SIGQUIT to the postmaster is what `pg_ctl stop -m
    /// immediate` sends; like `-w`, this waits (up to 10 s) for the server to remove its pid file.
    package func stopImmediatelyBlocking() {
        let pidFile = clusterDirectory.appendingPathComponent("postmaster.pid")
        guard startedServer, let contents = try? String(contentsOf: pidFile, encoding: .utf8),
            let first = contents.split(separator: "\n").first, let pid = pid_t(first.trimmingCharacters(in: .whitespaces)), pid > 0
        else { return }
        guard kill(pid, SIGQUIT) == 0 else { return }
        let deadline = ContinuousClock.now + .seconds(10)
        while FileManager.default.fileExists(atPath: pidFile.path), ContinuousClock.now < deadline { usleep(20_000) }
    }

    // MARK: - Steps

    private static func initialise(
        cluster: URL, passwordFile: URL, runner: CommandRunner, binaries: PostgresBinaries, logger: Logger
    ) async throws {
        var bytes = [UInt8](repeating: 0, count: 24)
        for index in bytes.indices { bytes[index] = UInt8.random(in: .min ... .max) }
        let password = bytes.map { String(format: "%02x", $0) }.joined()
        try Data(password.utf8).write(to: passwordFile)
        try setPermissions(passwordFile, mode: 0o600, owner: runner.runAsUser)
        do {
            try await runner.run(
                binaries.initdb,
                [
                    "-D", cluster.path, "-U", role, "--pwfile=\(passwordFile.path)",
                    "--auth-host=scram-sha-256", "--auth-local=peer", "-E", "UTF8", "--locale=C",
                ])
        } catch {
            throw EmbeddedPostgresError.commandFailed("initdb failed: \(error)")
        }
        logger.info("initialised embedded PostgreSQL cluster", metadata: ["directory": "\(cluster.path)"])
    }

    /// Line 4 of `postmaster.pid` is the port of a running server.
    private static func runningPort(cluster: URL) throws(EmbeddedPostgresError) -> Int {
        let pidFile = cluster.appendingPathComponent("postmaster.pid")
        guard let contents = try? String(contentsOf: pidFile, encoding: .utf8) else {
            throw .unreadableState("a server is running but \(pidFile.path) cannot be read")
        }
        let lines = contents.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count > 3, let port = Int(lines[3].trimmingCharacters(in: .whitespaces)) else {
            throw .unreadableState("cannot find the port in \(pidFile.path)")
        }
        return port
    }

    /// Hands the directory to the unprivileged user. When that user cannot reach it (say the
    /// checkout lives under root's home), falls back to a directory under /var/tmp.
    private static func prepareForUnprivilegedUser(_ directory: URL, user: String, logger: Logger) async throws -> URL {
        guard getpwnam(user) != nil else { throw EmbeddedPostgresError.noUnprivilegedUser(user) }
        try setPermissions(directory, mode: 0o700, owner: user)
        let probe = CommandRunner(runAsUser: user, workingDirectory: URL(fileURLWithPath: "/"))
        if await probe.succeeds("/usr/bin/test", ["-w", directory.path, "-a", "-x", directory.path]) {
            return directory
        }
        let digest = SHA256.hash(data: Data(directory.path.utf8)).prefix(6).map { String(format: "%02x", $0) }.joined()
        let fallback = URL(fileURLWithPath: "/var/tmp/data4help-\(digest)")
        logger.warning(
            "the PostgreSQL user cannot reach the data directory; using a fallback",
            metadata: ["directory": "\(directory.path)", "fallback": "\(fallback.path)"]
        )
        try FileManager.default.createDirectory(at: fallback, withIntermediateDirectories: true)
        try setPermissions(fallback, mode: 0o700, owner: user)
        return fallback
    }

    private static func setPermissions(_ url: URL, mode: Int, owner: String?) throws {
        var attributes: [FileAttributeKey: Any] = [.posixPermissions: mode]
        if let owner, let entry = getpwnam(owner) {
            attributes[.ownerAccountID] = Int(entry.pointee.pw_uid)
            attributes[.groupOwnerAccountID] = Int(entry.pointee.pw_gid)
        }
        try FileManager.default.setAttributes(attributes, ofItemAtPath: url.path)
    }
}
