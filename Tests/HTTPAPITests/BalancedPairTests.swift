import AsyncHTTPClient
import DatabaseLink
import DatabaseTestSupport
import ExternalPrograms
import Foundation
import HTTPAPI
import HTTPTypes
import NIOHTTP1
import PostgresNIO
import Synchronization
import Testing

/// Two real `data4help serve` processes on one empty database, behind Debian's nginx with the
/// configuration of `deploy/compose/nginx.conf` (its upstreams and port pointed at loopback):
/// migrations are applied once, the API works through the balancer — login tokens on both
/// instances, uploads, the server-sent event stream and the live WebSocket — in headless Chromium
/// (the page a spectator opens): Hummingbird's WebSocket client received no snapshot through
/// nginx where curl and Chromium did, not investigated further.
@Suite("Two instances behind nginx on loopback")
struct BalancedPairTests {
    static let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// A `data4help serve` process on `port`.
    final class Instance: Sendable {
        let port: Int
        /// The port's lock, held for the instance's life (see `LoopbackPortReservation`).
        private let reservation: LoopbackPortReservation
        private let database: DatabaseURL
        private let environment: [String: String]
        private let current: Mutex<ChildProcess>

        /// The running process (a new one after `restart()`).
        var process: ChildProcess { current.withLock { $0 } }

        /// Where its standard output (the JSON log lines) goes, when asked for.
        let output: URL?

        init(database: DatabaseURL, environment extra: [String: String] = [:], output: URL? = nil) async throws {
            reservation = try LoopbackPortReservation.forImmediateBind()
            port = reservation.port
            self.database = database
            self.output = output
            environment = ["HOST": "127.0.0.1", "PORT": String(port)].merging(extra) { $1 }
            current = Mutex(try await ServerProcess.launch(database: database, environment: environment, output: output))
        }

        /// A new process on the same port and database, once the last one has ended (`kill()`).
        func restart() async throws {
            let next = try await ServerProcess.launch(database: database, environment: environment, output: output)
            current.withLock { $0 = next }
        }

        /// SIGTERM, not waiting for the exit (for `defer`: the test is over).
        func stop() {
            process.terminate()
        }

        /// SIGTERM, and the exit awaited.
        func stopped() async {
            await process.stop()
        }

        /// `kill -9`: no shutdown, no goodbye to anyone; returns once the process is gone.
        func kill() async {
            process.send(SIGKILL)
            await process.exited()
        }
    }

    /// nginx with the deployment's configuration, in a directory of its own.
    final class Balancer: Sendable {
        let process: ChildProcess
        let port: Int
        let directory: URL
        /// The port's lock, held for the balancer's life (see `LoopbackPortReservation`).
        private let reservation: LoopbackPortReservation

        init(upstreams: [Int], nginx: String) async throws {
            reservation = try LoopbackPortReservation.forImmediateBind()
            let port = reservation.port
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nginx-\(UUID().uuidString)")
            self.port = port
            self.directory = directory
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var config = try String(contentsOf: TestPostgres.repositoryRoot.appendingPathComponent("deploy/compose/nginx.conf"), encoding: .utf8)
            for (index, upstream) in upstreams.enumerated() {
                config = config.replacingOccurrences(of: "server app\(index + 1):8080", with: "server 127.0.0.1:\(upstream)")
            }
            config = config.replacingOccurrences(of: "listen 80;", with: "listen 127.0.0.1:\(port);")
            let temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map { "\($0)_temp_path \(directory.path)/\($0);" }.joined(separator: " ")
            config = config.replacingOccurrences(of: "http {", with: "http {\n    access_log off; \(temp)")
            let prelude = (geteuid() == 0 ? "user root;\n" : "") + "pid \(directory.path)/nginx.pid;\nerror_log \(directory.path)/error.log;\n"
            try (prelude + config).write(to: directory.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
            // Its output dropped: it logs to error.log.
            process = try await ChildProcess.start(
                URL(fileURLWithPath: nginx),
                [
                    "-p", directory.path, "-e", directory.appendingPathComponent("error.log").path,
                    "-c", directory.appendingPathComponent("nginx.conf").path, "-g", "daemon off;",
                ])
        }

        /// SIGTERM (nginx exits at once), not waiting.
        func stop() {
            process.terminate()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    static func waitReady(_ port: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while (try? await HTTPClient.shared.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/readyz"), timeout: .seconds(1)))?.status != .ok {
            guard ContinuousClock.now < deadline else { throw WebhookReceiver.TimedOut() }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    @Test(.enabled(if: nginx != nil, "Debian's nginx is not installed (make test installs it)"), .timeLimit(.minutes(20)))
    func theWholeAPIThroughTheBalancer() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: ServerProcess.executable.path), "build the executable first (swift build)")
        // Both instances start together on an empty database: the migrations run once.
        let database = try await TestPostgres.shared.emptyDatabase()
        let first = try await Instance(database: database), second = try await Instance(database: database)
        defer { first.stop(); second.stop() }
        try await Self.waitReady(first.port)
        try await Self.waitReady(second.port)
        let files = try FileManager.default.contentsOfDirectory(atPath: TestPostgres.migrationsDirectory.path).filter { $0.hasSuffix(".sql") }
        let client = PostgresClient(configuration: database.clientConfiguration(maximumConnections: 1), backgroundLogger: TestPostgres.logger)
        let applied = try await withThrowingTaskGroup(of: Int?.self) { group in
            group.addTask {
                await client.run(); return nil
            }
            defer { group.cancelAll() }
            let rows = try await client.query("SELECT count(*)::int4, count(DISTINCT version)::int4 FROM schema_migrations")
            for try await (count, distinct) in rows.decode((Int32, Int32).self) { return count == distinct ? Int(count) : -1 }
            return 0
        }
        #expect(applied == files.count, "\(applied) rows for \(files.count) files")

        let balancer = try await Balancer(upstreams: [first.port, second.port], nginx: try #require(Self.nginx))
        defer { balancer.stop() }
        try await Self.waitReady(balancer.port)
        let api = RemoteAPI(base: "http://127.0.0.1:\(balancer.port)")

        // A login token from the balancer works on each instance.
        let (person, account) = try await api.individualSession()
        for port in [first.port, second.port] {
            #expect(try await RemoteAPI(base: "http://127.0.0.1:\(port)").send(.get, "/api/users/me", token: person).status == .ok)
        }

        // Server-sent events through nginx, as they happen: the party hears of the grant and the data.
        let party = try await api.thirdPartySession().token
        var stream = try await EventStreamReader.open(HTTPClient.shared, port: balancer.port, token: party)
        #expect(stream.response.status == .ok)
        let request = try #require(
            try await api.send(
                .post, "/api/thirdparties/requests", token: party,
                json: [
                    "fiscalCode": account["fiscalCode"]!, "types": ["heartRate"], "purpose": "Monitoring", "subscribe": true,
                ]
            ).string("id"))
        #expect(try await api.send(.put, "/api/users/requests/\(request)", token: person, json: ["decision": "accept"]).status == .ok)
        #expect(try await stream.next().type == "request.granted")
        #expect(try await api.send(.post, "/api/users/data", token: person, json: WebhookTests.upload(77, at: 3)).json["accepted"] as? Int == 1)
        let data = try await stream.next()
        #expect(data.type == "data.created" && data.items.map { $0["value"] as? Double } == [77])

        // The live view through nginx, in a real browser: the spectators' page connects its
        // WebSocket through the balancer, gets the snapshot, then the runner's move.
        let (organiser, _) = try await api.individualSession()
        let (id, startsAt) = try await RunPositionTests.liveEvent(api, organiser, enrolling: [(person, "Anna")])
        let browser = try await HeadlessChromium()
        defer { browser.stop() }
        let posted = Mutex(false)
        try await browser.withPage("http://127.0.0.1:\(balancer.port)/runs/\(id)") { session in
            let rows =
                "JSON.stringify({status: document.getElementById('status').textContent, rows: [...document.querySelectorAll('#leaderboard tr')].map(r => [...r.cells].map(c => c.textContent))})"
            func shown(_ value: Any?) -> (status: String, rows: [[String]]) {
                let parsed = ((value as? String).flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) } as? [String: Any]) ?? [:]
                return (parsed["status"] as? String ?? "", parsed["rows"] as? [[String]] ?? [])
            }
            _ = try await session.wait(for: rows) { shown($0).status == "Live" && shown($0).rows.first?[1] == "Anna" }
            try await Task.sleep(until: .now + .seconds(max(0, startsAt.timeIntervalSinceNow) + 0.2))
            _ = try await api.send(
                .post, "/api/users/runs/\(id)/positions", token: person,
                json: [
                    "positions": [
                        RunPositionTests.fix(0, at: startsAt.addingTimeInterval(1)), RunPositionTests.fix(20, at: startsAt.addingTimeInterval(3)),
                    ]
                ])
            _ = try await session.wait(for: rows) { shown($0).rows.first?[2] == "0.02" }
            posted.withLock { $0 = true }
        }
        #expect(posted.withLock { $0 })
    }
}
