import AccessManager
import ArgumentParser
import Data4HelpCore
import DatabaseLink
import Foundation
import HTTPAPI
import NIOCore
import NIOHTTP1
import PostgresNIO
import Subprocess
import SystemPackage

/// `data4help bench reads`: authenticated reads against the framework's own speed, with wrk
/// (Debian) as the load generator in a process of its own: `GET /healthz` (no credential, no
/// statement), `GET /api/users/me` (a login token, the person's row) and
/// `GET /api/users/data?limit=10` (a page of samples, for a person with 100 readings and for one
/// with a month of a reading a minute), taking turns for `--rounds` rounds of
/// `--seconds` each (a path's figure is its median), with the credential cache off (every request
/// looks its token up) and on, in the same run.
struct ReadBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "reads", abstract: "Authenticated reads against GET /healthz, with wrk.")

    @Option(help: "Seconds each path is loaded in each round.") var seconds = 5
    @Option(help: "Rounds in which the paths take turns; each path's figure is its median.") var rounds = 3
    @Option(help: "wrk connections.") var connections = 64

    static let wrk = ["/usr/bin/wrk", "/usr/local/bin/wrk"].first { FileManager.default.isExecutableFile(atPath: $0) }

    func run() async throws {
        guard let wrk = Self.wrk else { throw ValidationError("wrk is not installed (apt-get install wrk; make bench installs it)") }
        print("data4help bench reads — wrk -t2 -c\(connections) -d\(seconds)s × \(rounds) rounds a path, server and wrk on the same machine")
        for cached in [false, true] {
            // One token's requests, far above one person's rate limit: the limit is lifted.
            try await BenchServer.run(configure: {
                $0.credentialCacheLifetime = cached ? .seconds(60) : nil
                $0.rateLimitRequests = 1_000_000
            }) { server in
                let token = try await server.individualSession(0)
                // The last 100 minutes, a reading a minute: a person's newest page is recent.
                try await Self.upload(server, token: token, minutes: 100)
                // A month of a reading a minute (43,200 minute blocks): what a page costs for a
                // person with a wearable's history, not only for a newcomer.
                let dense = try await server.individualSession(99)  // 1...20: the revocation check's
                try await Self.upload(server, token: dense, minutes: 30 * 1440)
                let base = server.bases[0]
                let label = cached ? "credential cache on" : "credential cache off"
                // The paths take turns, `rounds` times: the machine's speed drifts over a run (on
                // this one /healthz alone ranged 12–19 k req/s between runs), and a share is only
                // meaningful against the baseline measured beside it.
                let paths: [(name: String, path: String, token: String?)] = [
                    ("GET /healthz", "/healthz", nil), ("GET /api/users/me", "/api/users/me", token),
                    ("GET /api/users/data?limit=10", "/api/users/data?limit=10", token),
                    ("GET /api/users/data?limit=10, a month of a reading a minute", "/api/users/data?limit=10", dense),
                ]
                var rates = Array(repeating: [Double](), count: paths.count)
                for _ in 0..<rounds {
                    for (index, path) in paths.enumerated() {
                        rates[index].append(
                            try await Self.load(wrk: wrk, url: base + path.path, token: path.token, seconds: seconds, connections: connections))
                    }
                }
                let healthz = percentile(rates[0].sorted(), 0.5)
                func report(_ name: String, _ rate: Double, shares: [Double] = []) {
                    let share = rate / healthz * 100
                    let spread = shares.count > 1 ? String(format: "; rounds %.0f–%.0f %%", shares.min() ?? 0, shares.max() ?? 0) : ""
                    print(String(format: "%@, %@: %.0f req/s (%.0f %% of /healthz%@)", label, name, rate, share, spread))
                    BenchSummary.record("reads", "\(name), \(label)", format: "%.0f req/s, %.0f %% of /healthz", rate, share)
                }
                for (index, name) in paths.map(\.name).enumerated() {
                    report(name, percentile(rates[index].sorted(), 0.5), shares: index == 0 ? [] : zip(rates[index], rates[0]).map { $0 / $1 * 100 })
                }
                if cached {
                    // The same page once three more years of monthly partitions exist, as they do
                    // for a deployment with history: a listing must not slow down as months pass.
                    let database = Database(configuration: server.databaseURL.clientConfiguration(maximumConnections: 1), logger: server.logger)
                    try await database.whileRunning {
                        try await PartitionMaintainer(database: database).ensureAround(Date(), monthsBack: 38, monthsAhead: 0)
                    }
                    report(
                        "GET /api/users/data?limit=10, 3 more years of partitions",
                        try await Self.load(
                            wrk: wrk, url: base + "/api/users/data?limit=10", token: token, seconds: seconds, connections: connections))
                    try await Self.revocationDelay(server)
                }
            }
        }
    }

    /// Uploads a heart-rate reading a minute over the last `minutes` minutes, newest first, in
    /// batches the upload accepts.
    static func upload(_ server: BenchServer, token: String, minutes: Int) async throws {
        let now = Date().timeIntervalSince1970.rounded(.down)
        for batch in stride(from: 0, to: minutes, by: 5_000).map({ $0..<min($0 + 5_000, minutes) }) {
            let items = batch.map {
                #"{"type":"heartRate","value":\#(60 + $0 % 30),"start":"\#(WireFormat.timestamp(Date(timeIntervalSince1970: now - Double($0) * 60)))"}"#
            }
            let (status, body) = try await server.send(
                .POST, "/api/users/data", token: token, json: #"{"items":[\#(items.joined(separator: ","))]}"#)
            guard status == .ok else { throw ValidationError("upload answered \(status): \(body)") }
        }
    }

    /// How soon a revocation committed elsewhere (here: by SQL on a connection of its own, so
    /// that only the database's announcement can tell the server) stops a cached token: the
    /// token is used until it is refused, every millisecond.
    static func revocationDelay(_ server: BenchServer) async throws {
        let database = Database(configuration: server.databaseURL.clientConfiguration(maximumConnections: 1), logger: server.logger)
        let delays = try await database.whileRunning {
            var delays: [Double] = []
            for index in 1...20 {
                let token = try await server.individualSession(index)
                for _ in 0..<2 { _ = try await server.send(.GET, "/api/users/me", token: token) }  // resolved, then cached
                try await database.query(
                    "UPDATE access_tokens SET revoked_at = now() WHERE token_hash = \(ByteBuffer(bytes: BearerSecret.digest(token)))")
                let committed = ContinuousClock.now
                while try await server.send(.GET, "/api/users/me", token: token).0 == .ok {
                    guard ContinuousClock.now - committed < .seconds(10) else { throw ValidationError("a revoked token still works after 10 s") }
                    try await Task.sleep(for: .milliseconds(1))
                }
                delays.append((ContinuousClock.now - committed).inSeconds * 1000)
            }
            return delays
        }
        let sorted = delays.sorted()
        let (p50, maximum) = (sorted[sorted.count / 2], sorted[sorted.count - 1])
        print(String(format: "a token revoked in the database, refused by a server that had it cached: p50 %.1f ms, max %.1f ms", p50, maximum))
        BenchSummary.record("reads", "revocation seen by a caching instance", format: "p50 %.1f ms, max %.1f ms", p50, maximum)
    }

    /// Requests per second wrk reports for one URL. Awaited without holding a thread: the
    /// server under load runs in this process.
    static func load(wrk: String, url: String, token: String?, seconds: Int, connections: Int) async throws -> Double {
        let result = try await Subprocess.run(
            .path(FilePath(wrk)),
            arguments: Arguments(
                ["-t2", "-c\(connections)", "-d\(seconds)s"] + (token.map { ["-H", "Authorization: Bearer \($0)"] } ?? []) + [url]),
            output: .string(limit: 1 << 20))
        let text = result.standardOutput
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Requests/sec:") }),
            let rate = Double(line.dropFirst("Requests/sec:".count).trimmingCharacters(in: .whitespaces))
        else { throw ValidationError("wrk said: \(text)") }
        if let errors = text.split(separator: "\n").first(where: { $0.contains("Non-2xx") }) {
            throw ValidationError("\(url): \(errors.trimmingCharacters(in: .whitespaces))")
        }
        return rate
    }
}
