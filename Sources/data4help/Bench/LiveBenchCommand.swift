import AccessManager
import ArgumentParser
import Data4HelpCore
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
        // Every runner is a phone of its own: posts must not queue behind a handful of client
        // connections (AsyncHTTPClient's default is 8 per host), or the benchmark measures that queue.
        try await BenchServer.run(
            instances: 2, clientConnections: 128,
            configure: { [intervalMs] in
                $0.databasePoolSize = 16
                $0.liveUpdateInterval = .milliseconds(intervalMs)
            }
        ) { server in
            print(
                "data4help bench live — \(runners) runners at 1 Hz for \(seconds) s, \(spectators) spectators over 2 instances (\(measured) measuring), batches every ≥ \(intervalMs) ms"
            )
            let database = Database(configuration: server.databaseURL.clientConfiguration(maximumConnections: 4), logger: server.logger)
            let tokens = try await database.whileRunning { () -> [String] in
                let seeder = PopulationSeeder(database: database)
                try await seeder.seed(individuals: runners + 1, days: 1, tag: "livebench")
                let ids = try await seeder.seededIds(tag: "livebench")
                let sessions = SessionService(database: database, hasher: PasswordHasher(), tokenLifetime: .seconds(86_400))
                return try await BenchServer.concurrently(ids.count, 8) { try await sessions.issue(for: .individual(ids[$0])).token }
            }
            // A 5 km out-and-back course from the Arco della Pace, starting shortly.
            let course = try GeoPath(points: [
                GeoPoint(latitude: 45.4755, longitude: 9.1725), GeoPoint(latitude: 45.4755 + 0.0225, longitude: 9.1725),
            ])
            let startsAt = Date().addingTimeInterval(20).addingTimeInterval(-Date().timeIntervalSince1970.truncatingRemainder(dividingBy: 1))
            let (created, event) = try await server.send(
                .POST, "/api/users/runs", token: tokens[runners],
                json: """
                    {"name":"Bench","startsAt":"\(startsAt.wireTime)","endsAt":"\(startsAt.addingTimeInterval(7200).wireTime)",
                     "enrolmentDeadline":"\(startsAt.wireTime)","maxParticipants":\(runners),
                     "path":{"type":"LineString","coordinates":[[9.1725,45.4755],[9.1725,45.498],[9.1725,45.4755]]}}
                    """)
            guard created == .created, let id = event["id"] as? String else { throw ValidationError("event not created: \(created)") }
            let runnerIds = try await BenchServer.concurrently(runners, 16) { index -> String in
                let (status, body) = try await server.send(
                    .POST, "/api/users/runs/\(id)/enrolment", token: tokens[index], json: #"{"displayName":"R\#(index)"}"#)
                guard status == .created, let runner = body["runnerId"] as? String else { throw ValidationError("enrolment \(index): \(status)") }
                return runner
            }

            let tally = LiveTally()
            let watchers = (0..<spectators).map { index in
                LiveWatcher(host: "127.0.0.1", port: server.ports[index % 2], path: "/api/runs/\(id)/live", measuring: index < measured, tally: tally)
            }
            let connecting = ContinuousClock.now
            while watchers.contains(where: { !$0.connected }) {
                guard ContinuousClock.now - connecting < .seconds(60) else {
                    throw ValidationError("only \(watchers.filter(\.connected).count) spectators connected")
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            print(String(format: "set-up: %d spectators connected in %.1f s", spectators, (ContinuousClock.now - connecting).inSeconds))
            try await Task.sleep(until: .now + .seconds(max(0, startsAt.timeIntervalSinceNow) + 0.3))

            // Runner i runs at 2.5–4.5 m/s; second s's fix is posted at start + s + i/n to the first instance.
            let speeds = (0..<runners).map { 2.5 + 2.0 * Double($0) / Double(max(1, runners - 1)) }
            let begin = ContinuousClock.now, cpuAtBegin = processCPUSeconds(), machineAtBegin = machineBusySeconds()
            let next = WorkCounter()
            let runnerCount = runners, duration = seconds, total = runners * seconds
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<128 {
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
                            let postedAt = ContinuousClock.now
                            let (status, _) = try await server.send(
                                .POST, "/api/users/runs/\(id)/positions", token: tokens[runner],
                                json: """
                                    {"positions":[{"latitude":\(point.latitude),"longitude":\(point.longitude),"accuracy":5,"time":"\(stamp)"}]}
                                    """)
                            if status != .ok { tally.failed.withLock { $0 += 1 } }
                            tally.postLatencies.withLock { $0.append((ContinuousClock.now - postedAt).inSeconds * 1000) }
                            if second == duration { tally.finalTimes.withLock { $0[runner] = stamp } }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let streamed = ContinuousClock.now - begin, cpu = processCPUSeconds() - cpuAtBegin
            let machine = machineBusySeconds().map { end in machineAtBegin.map { end - $0 } ?? .nan } ?? .nan
            try await Task.sleep(for: .seconds(3))  // the last updates
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
            let bytes = watchers.reduce(0) { $0 + $1.byteCount }
            let statesPerSpectator = Double(watchers.prefix(measured).reduce(0) { $0 + $1.stateCount }) / Double(max(1, measured))
            print(
                String(
                    format: "posted %d positions in %.1f s (%.0f/s), %d failed", total, streamed.inSeconds, Double(total) / streamed.inSeconds,
                    tally.failed.withLock { $0 }))
            let posts = tally.postLatencies.withLock { $0 }.sorted()
            print(
                String(
                    format: "post round trip (fix stored and announced): p50 %.1f ms   p99 %.1f ms", percentile(posts, 0.5), percentile(posts, 0.99)))
            print(
                String(
                    format: "fix posted → update received (%d measuring spectators, %d samples): p50 %.1f ms   p99 %.1f ms   max %.1f ms",
                    measured, latencies.count, percentile(latencies, 0.5), percentile(latencies, 0.99), latencies.last ?? .nan))
            print(
                String(
                    format: "messages delivered to spectators: %d (%.0f/s, %.1f MB/s); runner states per measuring spectator: %.0f for %d posted",
                    messages, Double(messages) / streamed.inSeconds, Double(bytes) / streamed.inSeconds / 1e6, statesPerSpectator, total))
            print(
                String(
                    format:
                        "CPU while posting: this process (both servers and every client) %.2f, whole machine (PostgreSQL included) %.2f of %d cores",
                    cpu / streamed.inSeconds, machine / streamed.inSeconds, ProcessInfo.processInfo.activeProcessorCount))
            print("spectators still connected at the end: \(open) of \(spectators)")
            let reasons = Dictionary(grouping: watchers.compactMap(\.lostBecause), by: { $0 }).mapValues(\.count)
            for (reason, count) in reasons.sorted(by: { $0.value > $1.value }) { print("  lost \(count): \(reason)") }
            print("final states missing: \(missing) of \(finals.count * spectators) (runner × spectator)")
            BenchSummary.record(
                "live", "\(runners) runners, \(spectators) spectators: fix posted → update received, p50 / p99 (ms)", format: "%.1f / %.1f",
                percentile(latencies, 0.5), percentile(latencies, 0.99))
            BenchSummary.record(
                "live", "positions posted per second; post round trip p99 (ms)", format: "%.0f; %.1f", Double(total) / streamed.inSeconds,
                percentile(posts, 0.99))
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

/// CPU time every core of the machine has spent busy so far (`/proc/stat`: all but idle and
/// iowait), nil where there is no such file.
func machineBusySeconds() -> Double? {
    guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
        let line = stat.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") })
    else { return nil }
    let ticks = line.split(separator: " ").dropFirst().compactMap { Double($0) }
    guard ticks.count >= 5 else { return nil }
    let busy = ticks.reduce(0, +) - ticks[3] - ticks[4]  // idle, iowait
    return busy / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// What the posting side and the measuring spectators note down.
final class LiveTally: Sendable {
    let sent = Mutex<[String: ContinuousClock.Instant]>([:])  // "runnerId|time" → when its post began
    let latencies = Mutex<[Double]>([])
    /// Each post's round trip (ms): the part of the delivery latency spent before the fix is stored.
    let postLatencies = Mutex<[Double]>([])
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
    private let state = Mutex<(connected: Bool, messages: Int, bytes: Int, states: Int, newest: [String: String], channel: (any Channel)?)>(
        (false, 0, 0, 0, [:], nil))
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
                configuration.leftOverBytesStrategy = .forwardBytes  // the snapshot may arrive with the 101 response
                _ = try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(configuration: configuration)
            }
        }
        bootstrap.connect(host: host, port: port).whenSuccess { [self] channel in
            state.withLock { $0.channel = channel }
        }
    }

    var connected: Bool { state.withLock { $0.connected } }
    var messageCount: Int { state.withLock { $0.messages } }
    var byteCount: Int { state.withLock { $0.bytes } }
    /// Runner states received by a measuring spectator.
    var stateCount: Int { state.withLock { $0.states } }
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
        let finalPhase = tally.finalPhase.withLock { $0 }
        let states = measuring || finalPhase ? Self.runnerTimes(in: message) : []
        state.withLock { state in
            state.messages += 1
            state.bytes += message.readableBytes
            state.states += measuring ? states.count : 0
            guard finalPhase else { return }
            for (runner, time) in states where state.newest[runner].map({ time > $0 }) ?? true { state.newest[runner] = time }
        }
        // Updates only: a snapshot re-sends states delivered before.
        guard measuring, message.readableBytesView.starts(with: Self.updatePrefix) else { return }
        for (id, time) in states {
            guard measured.withLock({ $0.insert(id + "|" + time).inserted }), let sent = tally.sent.withLock({ $0[id + "|" + time] }) else {
                continue
            }
            tally.latencies.withLock { $0.append((arrived - sent).inSeconds * 1000) }
        }
    }

    private static let updatePrefix = Array(#"{"type":"update""#.utf8)

    /// Every `"runnerId":"…"` in a message with the `"time":"…"` of the same state (the server
    /// writes keys sorted, so the time follows the id). This scan runs on every spectator's every
    /// message in the final phase, on the machine being measured: it jumps with memchr from one
    /// `I` (rare in these messages) to the next and compares bytes there, rather than parsing.
    static func runnerTimes(in buffer: ByteBuffer) -> [(String, String)] {
        buffer.readableBytesView.withUnsafeBytes { bytes -> [(String, String)] in
            guard let base = bytes.baseAddress else { return [] }
            let count = bytes.count
            func matches(_ key: [UInt8], at start: Int) -> Bool {
                start >= 0 && start + key.count <= count && memcmp(base + start, key, key.count) == 0
            }
            func string(from start: Int) -> (String, Int)? {
                guard start < count, let quote = memchr(base + start, Int32(UInt8(ascii: "\"")), count - start) else { return nil }
                let end = base.distance(to: UnsafeRawPointer(quote))
                return (String(decoding: UnsafeRawBufferPointer(start: base + start, count: end - start), as: UTF8.self), end)
            }
            var found: [(String, String)] = []
            var cursor = 0
            while cursor < count, let marker = memchr(base + cursor, Int32(UInt8(ascii: "I")), count - cursor) {
                let keyStart = base.distance(to: UnsafeRawPointer(marker)) - Self.idKeyMarkerOffset
                cursor = keyStart + Self.idKeyMarkerOffset + 1
                guard matches(Self.idKey, at: keyStart), let (id, idEnd) = string(from: keyStart + Self.idKey.count) else { continue }
                cursor = idEnd
                guard matches(Self.timeKey, at: idEnd + 1), let (time, timeEnd) = string(from: idEnd + 1 + Self.timeKey.count) else { continue }
                cursor = timeEnd
                found.append((id, time))
            }
            return found
        }
    }

    private static let idKey = Array(#""runnerId":""#.utf8)
    private static let idKeyMarkerOffset = 7  // where the `I` of `"runnerId":"` is
    private static let timeKey = Array(#","time":""#.utf8)
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
