import AccessManager
import ArgumentParser
import DatabaseLink
import Foundation
import HTTPAPI
import HummingbirdWSClient
import Logging
import NIOHTTP1
import RunEvents
import Synchronization

/// `data4help bench live`: one event, runners posting a position every second to one instance,
/// spectator WebSockets split over two instances; prints fix posted → update received p50/p99,
/// messages/s, and whether every spectator ended with every runner's final state.
///
/// Latency is measured on `measured` spectators that parse every message (half on each
/// instance); the others count messages and keep only what arrives after the final positions
/// are sent, which is then checked: every runner's last fix must be there.
struct LiveBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "live", abstract: "Track4Run live fan-out latency over two instances.")

    @Option(help: "Runners, each posting one position per second.") var runners = 500
    @Option(help: "Spectator WebSockets, split over the two instances.") var spectators = 2_000
    @Option(help: "Spectators that parse every message for the latency figures.") var measured = 50
    @Option(help: "Seconds of running.") var seconds = 30

    func run() async throws {
        try await BenchServer.run(instances: 2, configure: { $0.databasePoolSize = 16 }) { server in
            print("data4help bench live — \(runners) runners at 1 Hz for \(seconds) s, \(spectators) spectators over 2 instances (\(measured) measuring)")
            let database = Database(configuration: server.databaseURL.clientConfiguration(maximumConnections: 4), logger: server.logger)
            let tokens = try await database.whileRunning { () -> [String] in
                let seeder = PopulationSeeder(database: database)
                try await seeder.seed(individuals: runners + 1, days: 1, tag: "livebench")
                let ids = try await seeder.seededIds(tag: "livebench")
                let sessions = SessionService(database: database, hasher: PasswordHasher(), tokenLifetime: .seconds(86_400))
                return try await BenchServer.concurrently(ids.count, 8) { try await sessions.issue(for: .individual(ids[$0])).token }
            }
            // A 5 km out-and-back course from the Arco della Pace, starting shortly.
            let course = try GeoPath(points: [GeoPoint(latitude: 45.4755, longitude: 9.1725), GeoPoint(latitude: 45.4755 + 0.0225, longitude: 9.1725)])
            let startsAt = Date().addingTimeInterval(20).addingTimeInterval(-Date().timeIntervalSince1970.truncatingRemainder(dividingBy: 1))
            let (created, event) = try await server.send(.POST, "/api/users/runs", token: tokens[runners], json: """
                {"name":"Bench","startsAt":"\(startsAt.wireTime)","endsAt":"\(startsAt.addingTimeInterval(7200).wireTime)",
                 "enrolmentDeadline":"\(startsAt.wireTime)","maxParticipants":\(runners),
                 "path":{"type":"LineString","coordinates":[[9.1725,45.4755],[9.1725,45.498],[9.1725,45.4755]]}}
                """)
            guard created == .created, let id = event["id"] as? String else { throw ValidationError("event not created: \(created)") }
            let runnerIds = try await BenchServer.concurrently(runners, 16) { index -> String in
                let (status, body) = try await server.send(.POST, "/api/users/runs/\(id)/enrolment", token: tokens[index], json: #"{"displayName":"R\#(index)"}"#)
                guard status == .created, let runner = body["runnerId"] as? String else { throw ValidationError("enrolment \(index): \(status)") }
                return runner
            }

            let tally = LiveTally()
            let watchers = (0..<spectators).map { index in
                LiveWatcher(url: server.bases[index % 2].replacingOccurrences(of: "http://", with: "ws://") + "/api/runs/\(id)/live",
                            measuring: index < measured, tally: tally, logger: server.logger)
            }
            let connecting = ContinuousClock.now
            while watchers.contains(where: { !$0.connected }) {
                guard ContinuousClock.now - connecting < .seconds(60) else { throw ValidationError("only \(watchers.filter(\.connected).count) spectators connected") }
                try await Task.sleep(for: .milliseconds(50))
            }
            print(String(format: "set-up: %d spectators connected in %.1f s", spectators, (ContinuousClock.now - connecting).inSeconds))
            try await Task.sleep(until: .now + .seconds(max(0, startsAt.timeIntervalSinceNow) + 0.3))

            // Runner i runs at 2.5–4.5 m/s; second s's fix is posted at start + s + i/n to the first instance.
            let speeds = (0..<runners).map { 2.5 + 2.0 * Double($0) / Double(max(1, runners - 1)) }
            let begin = ContinuousClock.now
            let next = WorkCounter()
            let runnerCount = runners, duration = seconds, total = runners * seconds
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<32 {
                    group.addTask {
                        while case let k = next.take(), k < total {
                            let (second, runner) = (k / runnerCount + 1, k % runnerCount)
                            if second == duration, runner == 0 { tally.finalPhase.withLock { $0 = true } }
                            let due = begin + .seconds(Double(k) / Double(runnerCount))
                            if ContinuousClock.now < due { try await Task.sleep(until: due) }
                            let time = startsAt.addingTimeInterval(Double(second))
                            let point = course.point(at: speeds[runner] * Double(second))
                            let stamp = time.wireTime
                            tally.posted(runner: runnerIds[runner], time: stamp)
                            let (status, _) = try await server.send(.POST, "/api/users/runs/\(id)/positions", token: tokens[runner], json: """
                                {"positions":[{"latitude":\(point.latitude),"longitude":\(point.longitude),"accuracy":5,"time":"\(stamp)"}]}
                                """)
                            if status != .ok { tally.failed.withLock { $0 += 1 } }
                            if second == duration { tally.finalTimes.withLock { $0[runner] = stamp } }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let streamed = ContinuousClock.now - begin
            try await Task.sleep(for: .seconds(3))   // the last updates
            for watcher in watchers { watcher.stop() }

            let finals = tally.finalTimes.withLock { $0 }
            var missing = 0
            for watcher in watchers {
                let seen = watcher.finalStates()
                for (runner, time) in finals where seen[runnerIds[runner]] != time { missing += 1 }
            }
            let latencies = tally.latencies.withLock { $0 }.sorted()
            let messages = watchers.reduce(0) { $0 + $1.messageCount }
            print(String(format: "posted %d positions in %.1f s (%.0f/s), %d failed", total, streamed.inSeconds, Double(total) / streamed.inSeconds, tally.failed.withLock { $0 }))
            print(String(format: "fix posted → update received (%d measuring spectators, %d samples): p50 %.1f ms   p99 %.1f ms   max %.1f ms",
                         measured, latencies.count, percentile(latencies, 0.5), percentile(latencies, 0.99), latencies.last ?? .nan))
            print(String(format: "messages delivered to spectators: %d (%.0f/s)", messages, Double(messages) / streamed.inSeconds))
            print("final states missing: \(missing) of \(finals.count * spectators) (runner × spectator)")
        }
    }

}

/// What the posting side and the measuring spectators note down.
final class LiveTally: Sendable {
    let sent = Mutex<[String: ContinuousClock.Instant]>([:])   // "runnerId|time" → when its post began
    let latencies = Mutex<[Double]>([])
    let failed = Mutex(0)
    let finalPhase = Mutex(false)
    /// Each runner's last fix time (by runner index).
    let finalTimes = Mutex<[Int: String]>([:])

    func posted(runner: String, time: String) {
        sent.withLock { $0[runner + "|" + time] = .now }
    }
}

/// One spectator: a WebSocket client on the live view.
final class LiveWatcher: Sendable {
    private let state = Mutex<(connected: Bool, messages: Int, late: [String], task: Task<Void, any Error>?)>((false, 0, [], nil))

    init(url: String, measuring: Bool, tally: LiveTally, logger: Logger) {
        let task = Task { [self] in
            _ = try await WebSocketClient.connect(url: url, configuration: .init(maxFrameSize: 1 << 22), logger: logger) { inbound, _, _ in
                var seen = Set<String>()   // a state re-sent because a rank changed is not a new delivery
                for try await message in inbound.messages(maxSize: 1 << 22) {
                    guard case .text(let text) = message else { continue }
                    let arrived = ContinuousClock.now
                    let final = tally.finalPhase.withLock { $0 }
                    self.state.withLock { state in
                        state.connected = true
                        state.messages += 1
                        if final { state.late.append(text) }
                    }
                    guard measuring, let json = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                          json["type"] as? String == "update" else { continue }
                    for runner in (json["runners"] as? [[String: Any]]) ?? [] {
                        guard let id = runner["runnerId"] as? String, let time = runner["time"] as? String,
                              seen.insert(id + "|" + time).inserted, let sent = tally.sent.withLock({ $0[id + "|" + time] }) else { continue }
                        tally.latencies.withLock { $0.append((arrived - sent).inSeconds * 1000) }
                    }
                }
            }
        }
        state.withLock { $0.task = task }
    }

    var connected: Bool { state.withLock { $0.connected } }
    var messageCount: Int { state.withLock { $0.messages } }

    func stop() {
        state.withLock { $0.task?.cancel() }
    }

    /// Each runner's newest time among the messages received after the final positions were sent.
    func finalStates() -> [String: String] {
        var newest: [String: String] = [:]
        for text in state.withLock({ $0.late }) {
            guard let json = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { continue }
            for runner in (json["runners"] as? [[String: Any]]) ?? [] {
                guard let id = runner["runnerId"] as? String, let time = runner["time"] as? String else { continue }
                if newest[id].map({ time > $0 }) ?? true { newest[id] = time }
            }
        }
        return newest
    }
}
