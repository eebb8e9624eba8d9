import AccessManager
import ArgumentParser
import DatabaseLink
import Foundation
import HTTPAPI
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
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
    @Option(help: "LIVE_UPDATE_INTERVAL_MS of both instances.") var intervalMs = 50

    func run() async throws {
        try await BenchServer.run(instances: 2, configure: { [intervalMs] in
            $0.databasePoolSize = 16
            $0.liveUpdateInterval = .milliseconds(intervalMs)
        }) { server in
            print("data4help bench live — \(runners) runners at 1 Hz for \(seconds) s, \(spectators) spectators over 2 instances (\(measured) measuring), batches every ≥ \(intervalMs) ms")
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
                LiveWatcher(host: "127.0.0.1", port: server.ports[index % 2], path: "/api/runs/\(id)/live", measuring: index < measured, tally: tally)
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
            let begin = ContinuousClock.now, cpuAtBegin = processCPUSeconds()
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
            let streamed = ContinuousClock.now - begin, cpu = processCPUSeconds() - cpuAtBegin
            try await Task.sleep(for: .seconds(3))   // the last updates
            let open = watchers.filter(\.open).count
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
            print(String(format: "CPU of this process (both servers and every client) while posting: %.2f of %d cores", cpu / streamed.inSeconds, ProcessInfo.processInfo.activeProcessorCount))
            print("spectators still connected at the end: \(open) of \(spectators)")
            let reasons = Dictionary(grouping: watchers.compactMap(\.lostBecause), by: { $0 }).mapValues(\.count)
            for (reason, count) in reasons.sorted(by: { $0.value > $1.value }) { print("  lost \(count): \(reason)") }
            print("final states missing: \(missing) of \(finals.count * spectators) (runner × spectator)")
        }
    }

}

/// User and system CPU time of this process so far.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
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

/// One spectator: a WebSocket client on the live view, handling frames on its event loop (a
/// plain NIO pipeline: 2,000 clients share the machine with the servers they measure, so the
/// load generator must cost as little as a browser elsewhere would). Messages are single text
/// frames; a measuring spectator parses each, the others count them and, once the final
/// positions are being posted, note each runner's newest time (a byte scan, not a JSON parse).
final class LiveWatcher: Sendable {
    private let state = Mutex<(connected: Bool, messages: Int, newest: [String: String], channel: (any Channel)?)>((false, 0, [:], nil))
    private let measuring: Bool
    private let tally: LiveTally
    /// Runner and time of the states already measured (a state re-sent because a rank changed is not a new delivery).
    private let measured = Mutex(Set<String>())

    init(host: String, port: Int, path: String, measuring: Bool, tally: LiveTally) {
        self.measuring = measuring
        self.tally = tally
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).channelInitializer { [self] channel in
            channel.eventLoop.makeCompletedFuture {
                let upgrader = NIOTypedWebSocketClientUpgrader<Void>(maxFrameSize: 1 << 24) { channel, _ in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(SpectatorHandler(watcher: self))
                        self.state.withLock { $0.connected = true }
                    }
                }
                var headers = HTTPHeaders()
                headers.add(name: "Host", value: "\(host):\(port)")
                headers.add(name: "Content-Length", value: "0")
                let upgrade = NIOTypedHTTPClientUpgradeConfiguration<Void>(
                    upgradeRequestHead: HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers),
                    upgraders: [upgrader],
                    notUpgradingCompletionHandler: { channel in channel.eventLoop.makeCompletedFuture { channel.close(promise: nil) } }
                )
                var configuration = NIOUpgradableHTTPClientPipelineConfiguration(upgradeConfiguration: upgrade)
                configuration.leftOverBytesStrategy = .forwardBytes   // the snapshot may arrive with the 101 response
                _ = try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(configuration: configuration)
            }
        }
        bootstrap.connect(host: host, port: port).whenSuccess { [self] channel in
            state.withLock { $0.channel = channel }
        }
    }

    var connected: Bool { state.withLock { $0.connected } }
    var messageCount: Int { state.withLock { $0.messages } }
    var open: Bool { state.withLock { $0.channel?.isActive ?? false } }

    func stop() {
        state.withLock { $0.channel?.close(promise: nil) }
    }

    /// Each runner's newest time among the messages received after the final positions began.
    func finalStates() -> [String: String] {
        state.withLock { $0.newest }
    }

    /// Why the connection ended early, if it did.
    var lostBecause: String? { lostReason.withLock { $0 } }
    private let lostReason = Mutex<String?>(nil)

    fileprivate func lost(_ reason: String) {
        lostReason.withLock { $0 = $0 ?? reason }
    }

    fileprivate func received(_ message: ByteBuffer) {
        let arrived = ContinuousClock.now
        let newest = tally.finalPhase.withLock { $0 } ? Self.runnerTimes(in: message) : []
        state.withLock { state in
            state.messages += 1
            for (runner, time) in newest where state.newest[runner].map({ time > $0 }) ?? true { state.newest[runner] = time }
        }
        guard measuring, let json = try? JSONSerialization.jsonObject(with: Data(message.readableBytesView)) as? [String: Any],
              json["type"] as? String == "update" else { return }
        for runner in (json["runners"] as? [[String: Any]]) ?? [] {
            guard let id = runner["runnerId"] as? String, let time = runner["time"] as? String,
                  measured.withLock({ $0.insert(id + "|" + time).inserted }), let sent = tally.sent.withLock({ $0[id + "|" + time] }) else { continue }
            tally.latencies.withLock { $0.append((arrived - sent).inSeconds * 1000) }
        }
    }
    /// Every `"runnerId":"…"` in a message with the `"time":"…"` of the same state object (the
    /// server writes keys sorted, so the time follows the id before the next state begins).
    static func runnerTimes(in buffer: ByteBuffer) -> [(String, String)] {
        let idKey = Array(#""runnerId":""#.utf8), timeKey = Array(#""time":""#.utf8)
        return buffer.readableBytesView.withUnsafeBytes { bytes -> [(String, String)] in
            func find(_ key: [UInt8], from start: Int) -> Int? {
                var index = start
                while index + key.count <= bytes.count {
                    if bytes[index] == key[0], zip(key.indices, key).allSatisfy({ bytes[index + $0] == $1 }) { return index + key.count }
                    index += 1
                }
                return nil
            }
            func string(from start: Int) -> (String, Int)? {
                guard let end = (start..<bytes.count).first(where: { bytes[$0] == UInt8(ascii: "\"") }) else { return nil }
                return (String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self), end)
            }
            var found: [(String, String)] = []
            var cursor = 0
            while let idStart = find(idKey, from: cursor), let (id, idEnd) = string(from: idStart) {
                let next = find(idKey, from: idEnd) ?? bytes.count
                cursor = idEnd
                guard let timeStart = find(timeKey, from: idEnd), timeStart < next, let (time, _) = string(from: timeStart) else { continue }
                found.append((id, time))
            }
            return found
        }
    }
}

/// Hands a spectator's text frames to it and answers the server's pings.
private final class SpectatorHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    let watcher: LiveWatcher

    init(watcher: LiveWatcher) {
        self.watcher = watcher
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            watcher.received(frame.unmaskedData)
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            watcher.lost("closed by the server")
            context.close(promise: nil)
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        watcher.lost(String(describing: error))
        context.close(promise: nil)
    }
}
