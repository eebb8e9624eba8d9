import AccessManager
import ArgumentParser
import AsyncHTTPClient
import Data4HelpCore
import DatabaseLink
import EmbeddedFiles
import Foundation
import HTTPAPI
import Logging
import NIOCore
import NIOHTTP1
import Prometheus
import ServiceLifecycle

/// A throwaway embedded PostgreSQL and the real server on it, with an HTTP client, for one
/// benchmark run; everything is removed afterwards.
struct BenchServer: Sendable {
    /// Every instance's address; `base` is the first.
    let bases: [String]
    var base: String { bases[0] }
    /// Every instance's port.
    var ports: [Int] { bases.map { Int($0.split(separator: ":").last ?? "") ?? 0 } }
    let databaseURL: DatabaseURL
    let client: HTTPClient
    /// Where the instances write their e-mail (registration links), read as a mailbox.
    let mailbox: PickupMailbox
    let logger: Logger

    /// The servers log as `serve` does (JSON lines at `LOG_LEVEL`, by default `info`: a line per
    /// request), into /dev/null rather than between the figures: a bench pays for the handler
    /// production runs, not swift-log's default one (which re-rendered a logger's metadata
    /// whenever a key was set).
    private static let loggingBootstrapped: Void = {
        let level = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
        _ = ServerEnvironment.bootstrapLogging(level: level, output: FileHandle(forWritingAtPath: "/dev/null") ?? .standardError)
    }()

    /// `instances` servers share the one database (each with its own port).
    /// - Parameter clientConnections: the HTTP client's connections per instance (requests beyond
    ///   them queue in the client, as a browser's would).
    static func run(
        instances: Int = 1, clientConnections: Int = 8, configure: (inout AppConfiguration) -> Void = { _ in },
        _ body: (BenchServer) async throws -> Void
    ) async throws {
        _ = loggingBootstrapped
        let logger = Logger(label: "data4help.bench")
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("data4help-bench-\(getpid())")
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        defer { try? FileManager.default.removeItem(at: directory) }
        var options = EmbeddedPostgres.Options(directory: directory.appendingPathComponent("pg"))
        options.settings = postgresSettings
        let cluster = try await EmbeddedPostgres.start(options, logger: logger)
        defer { keepPostgresLog(cluster.logFile) }
        do {
            let url = try await cluster.database(named: "bench", logger: logger)
            let mailbox = PickupMailbox(directory: directory.appendingPathComponent("mail"))
            try await serve(
                databaseURL: url, mailbox: mailbox, instances: instances, clientConnections: clientConnections, configure: configure,
                logger: logger, body
            )
            try await cluster.stop()
        } catch {
            try? await cluster.stop()
            throw error
        }
    }

    /// `BENCH_POSTGRES_SETTINGS`: extra `name=value` settings, separated by spaces, for the
    /// bench's PostgreSQL — for profiling, e.g. `shared_preload_libraries=auto_explain
    /// auto_explain.log_min_duration=20ms auto_explain.log_analyze=on`. The figures printed are
    /// only comparable with runs that had none.
    private static var postgresSettings: [String: String] {
        let words = ProcessInfo.processInfo.environment["BENCH_POSTGRES_SETTINGS"]?.split(separator: " ") ?? []
        return Dictionary(
            words.compactMap { word in word.firstIndex(of: "=").map { (String(word[..<$0]), String(word[word.index(after: $0)...])) } },
            uniquingKeysWith: { $1 })
    }

    /// `BENCH_POSTGRES_LOG`: a path to copy the bench's PostgreSQL log to before its cluster is
    /// removed (with `BENCH_POSTGRES_SETTINGS`, the plans `auto_explain` wrote).
    private static func keepPostgresLog(_ log: URL) {
        guard let path = ProcessInfo.processInfo.environment["BENCH_POSTGRES_LOG"] else { return }
        try? FileManager.default.removeItem(atPath: path)
        try? FileManager.default.copyItem(at: log, to: URL(fileURLWithPath: path))
    }

    private static func serve(
        databaseURL: DatabaseURL, mailbox: PickupMailbox, instances: Int, clientConnections: Int, configure: (inout AppConfiguration) -> Void,
        logger: Logger,
        _ body: (BenchServer) async throws -> Void
    ) async throws {
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        var bases: [String] = []
        var reservations: [LoopbackPortReservation] = []  // held while the instances run
        for _ in 0..<max(1, instances) {
            var configuration = AppConfiguration()
            configuration.builtInFiles = BuiltInFiles(base64: EmbeddedFiles.all)
            reservations.append(try LoopbackPortReservation.forImmediateBind())
            configuration.port = reservations[reservations.count - 1].port
            configuration.mailPickupDirectory = mailbox.directory.path
            configure(&configuration)
            let app = try buildApplication(
                configuration: configuration, databaseURL: databaseURL, metrics: PrometheusCollectorRegistry(), logger: logger)
            services.append(.init(service: app))
            bases.append("http://127.0.0.1:\(configuration.port)")
        }
        let serviceGroup = ServiceGroup(configuration: .init(services: services, logger: logger))
        var clientConfiguration = HTTPClient.Configuration(timeout: .init(connect: .seconds(5), read: .seconds(120)))
        clientConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = clientConnections
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
        let server = BenchServer(bases: bases, databaseURL: databaseURL, client: client, mailbox: mailbox, logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    try await serviceGroup.run()
                } catch is CancellationError {
                    // The graceful shutdown below ends the server this way.
                }
            }
            do {
                try await server.waitUntilReady()
                withExtendedLifetime(reservations) {}  // every instance listens: the ports are theirs
                try await body(server)
                try await client.shutdown()
            } catch {
                try? await client.shutdown()
                await serviceGroup.triggerGracefulShutdown()
                throw error
            }
            await serviceGroup.triggerGracefulShutdown()
            try await group.waitForAll()
        }
    }

    private func waitUntilReady() async throws {
        for base in bases {
            var ready = false
            for _ in 0..<200 where !ready {
                if let response = try? await client.execute(HTTPClientRequest(url: "\(base)/readyz"), timeout: .seconds(2)), response.status == .ok {
                    ready = true
                } else {
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            guard ready else { throw ValidationError("the server at \(base) did not become ready") }
        }
    }

    /// Sends a request with an optional JSON body; answers the status and the JSON object returned.
    @discardableResult
    func send(
        _ method: HTTPMethod, _ path: String, token: String? = nil, json: String? = nil
    ) async throws -> (status: HTTPResponseStatus, body: [String: Any]) {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: json))
        }
        let response = try await client.execute(request, timeout: .seconds(60))
        let data = try await response.body.collect(upTo: 1 << 22)
        let object = (try? JSONSerialization.jsonObject(with: Data(data.readableBytesView))) as? [String: Any]
        return (response.status, object ?? [:])
    }

    /// Registers bench individual `index` (confirming with the mailed link) and returns a login token.
    func individualSession(_ index: Int) async throws -> String {
        let password = "bench password \(index)"
        try await send(
            .POST, "/api/users/registration",
            json: """
                {"email":"\(Self.email(index))","password":"\(password)","fiscalCode":"\(Self.fiscalCode(index))",
                 "fullName":"Bench \(index)","birthDate":"1950-01-01","sex":"other","homeArea":"IT-MI"}
                """)
        try await confirm("/api/users/registration/confirmation", email: Self.email(index))
        return try await login("/api/users/login", email: Self.email(index), password: password)
    }

    /// Registers bench organisation `index` (confirming with the mailed link) and returns a login token.
    func thirdPartySession(_ index: Int) async throws -> String {
        let password = "bench password \(index)"
        try await send(
            .POST, "/api/thirdparties/registration",
            json: #"{"name":"Bench Org \#(index)","email":"org\#(index)@bench.example","password":"\#(password)"}"#)
        try await confirm("/api/thirdparties/registration/confirmation", email: "org\(index)@bench.example")
        return try await login("/api/thirdparties/login", email: "org\(index)@bench.example", password: password)
    }

    private func confirm(_ path: String, email: String) async throws {
        guard let token = try await mailbox.confirmationToken(for: email) else { throw ValidationError("no confirmation message to \(email)") }
        let (status, _) = try await send(.POST, path, json: #"{"token":"\#(token)"}"#)
        guard status == .created else { throw ValidationError("confirmation of \(email) answered \(status)") }
    }

    static func fiscalCode(_ index: Int) -> String { "BENCH\(100_000 + index)" }

    /// The email of bench individual `index` (`individualSession`).
    static func email(_ index: Int) -> String { "bench\(index)@bench.example" }

    private func login(_ path: String, email: String, password: String) async throws -> String {
        let (_, body) = try await send(.POST, path, json: #"{"email":"\#(email)","password":"\#(password)"}"#)
        guard let token = body["token"] as? String else { throw ValidationError("login of \(email) failed") }
        return token
    }

    /// Runs `count` jobs, `concurrency` at a time, each getting the next number.
    /// `count` individuals written straight to the database (no password, no HTTP) for benchmarks
    /// that store through the SQL alone; `name` keeps each batch's e-mail addresses and fiscal
    /// codes apart. Their ids, in order.
    static func insertIndividuals(_ count: Int, named name: String, database: Database) async throws -> [Int64] {
        let store = IndividualStore(database: database)
        var ids: [Int64] = []
        for index in 0..<count {
            ids.append(
                try await store.insert(
                    NewIndividual(
                        email: "\(name)-\(index)@bench.example", passwordHash: "-", fiscalCode: "\(name.uppercased())\(100_000 + index)",
                        fullName: "\(name) \(index)", birthDate: "1960-01-01", sex: "other", homeArea: "IT-MI"
                    )
                ).id)
        }
        return ids
    }

    static func concurrently<T: Sendable>(_ count: Int, _ concurrency: Int, _ job: @escaping @Sendable (Int) async throws -> T) async throws -> [T] {
        let next = WorkCounter()
        return try await withThrowingTaskGroup(of: [(Int, T)].self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    var mine: [(Int, T)] = []
                    while case let index = next.take(), index < count { mine.append((index, try await job(index))) }
                    return mine
                }
            }
            var results: [(Int, T)] = []
            for try await part in group { results += part }
            return results.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }
}
