import AccessManager
import ArgumentParser
import AsyncHTTPClient
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

/// `data4help bench live`: one event per protocol version, runners posting a position every
/// `--fix-every` to one instance, spectator WebSockets split over two instances; prints fix posted
/// → update received p50/p99, messages/s and bytes, the bytes per runner update, the CPU of the
/// server apart from the load generator's and per delivered runner update, and whether every
/// spectator ended with every runner's final state.
///
/// By default version 1 runs first as the baseline, then version 2, on fresh events in the same
/// run. With `--follow`, each spectator follows that many runners and takes the field every
/// `--field-every` (version 2 only); latency is then measured on the followed runners.
///
/// Latency is measured on `measured` spectators that parse every message (half on each
/// instance); the others count messages and states. After the measured rounds every runner posts
/// once more, and every spectator reads the states of that round, which are then checked: every
/// runner's last fix must be there. The figures (latency, rates, CPU) cover the measured rounds
/// only: reading every state on 5,000 spectators is the load generator's work, and in the city
/// race it had the posts of the round it ran in wait p50 26–104 ms against 8–10 before it.
struct LiveBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "live", abstract: "Track4Run live fan-out latency over two instances.")

    @Option(help: "Runners.") var runners = 500
    @Option(help: "How often each runner posts a position (1s, 5s, 500ms).") var fixEvery = BenchDuration(milliseconds: 1_000)
    @Option(help: "Spectator WebSockets, split over the two instances.") var spectators = 2_000
    @Option(help: "Spectators that parse every message for the latency figures.") var measured = 50
    @Option(help: "Seconds of running.") var seconds = 30
    @Option(help: "LIVE_UPDATE_INTERVAL_MS of both instances.") var intervalMs = 50
    @Option(help: "Runners each spectator follows (0: every spectator takes the whole field at every update).") var follow = 0
    @Option(help: "With --follow: how often a spectator takes the whole field (0: at every update).") var fieldEvery = BenchDuration(milliseconds: 0)
    @Option(help: "Protocol versions to run one after the other, comma-separated (default 1,2; with --follow 2).") var protocols: String?
    @Option(help: "Points of the course (the same out-and-back line, sampled evenly; a marathon's drawn course has thousands).")
    var coursePoints = 3
    @Flag(help: "Also print, for each second of the posting, the posts' round trip and the machine's CPU.")
    var timeline = false
    @Option(help: "Write a CPU profile of this process while the runners post to this file (Tools/profile-report.py reads it).")
    var profile: String?

    func validate() throws {
        guard runners > 0, spectators > 0, seconds > 0, fixEvery.milliseconds > 0 else {
            throw ValidationError("runners, spectators, seconds and --fix-every must be positive")
        }
        guard follow <= min(50, runners) else { throw ValidationError("--follow is at most 50 and at most --runners") }
        guard (3...GeoPath.maximumPoints).contains(coursePoints) else { throw ValidationError("--course-points is 3 to \(GeoPath.maximumPoints)") }
    }

    func run() async throws {
        let versions = (protocols ?? (follow > 0 ? "2" : "1,2")).split(separator: ",").compactMap { Int($0) }
        guard !versions.isEmpty, versions.allSatisfy({ $0 == 1 || $0 == 2 }), follow == 0 || !versions.contains(1) else {
            throw ValidationError("--protocols is 1, 2 or 1,2; version 1 cannot follow")
        }
        guard profile == nil || versions.count == 1 else { throw ValidationError("--profile takes one protocol version (--protocols 2)") }
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
                "data4help bench live — \(runners) runners posting every \(fixEvery) for \(seconds) s, \(spectators) spectators over 2 instances (\(measured) measuring)"
                    + (follow > 0 ? ", each following \(follow) with the field every \(fieldEvery)" : ", each taking the whole field")
                    + ", batches every ≥ \(intervalMs) ms, a course of \(coursePoints) points; protocol versions \(versions.map(String.init).joined(separator: " then "))"
            )
            let database = Database(configuration: server.databaseURL.clientConfiguration(maximumConnections: 4), logger: server.logger)
            let seeding = ContinuousClock.now
            let tokens = try await database.whileRunning { () -> [String] in
                let seeder = PopulationSeeder(database: database)
                try await seeder.seed(individuals: runners + 1, days: 1, tag: "livebench")
                let ids = try await seeder.seededIds(tag: "livebench")
                let sessions = SessionService(database: database, hasher: PasswordHasher(), tokenLifetime: .seconds(86_400))
                return try await BenchServer.concurrently(ids.count, 8) { try await sessions.issue(for: .individual(ids[$0])).token }
            }
            print(String(format: "set-up: %d people seeded with sessions in %.1f s", runners + 1, (ContinuousClock.now - seeding).inSeconds))
            // The load generator's own event loops (spectators' sockets, the posting client), so that
            // its CPU can be told apart from the servers'.
            let generator = MultiThreadedEventLoopGroup(numberOfThreads: 2)
            let generatorThreads = try await ThreadCPU.threads(of: generator)
            var clientConfiguration = HTTPClient.Configuration(timeout: .init(connect: .seconds(5), read: .seconds(120)))
            clientConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 128
            let poster = HTTPClient(eventLoopGroupProvider: .shared(generator), configuration: clientConfiguration)
            do {
                for version in versions {
                    try await scenario(
                        version: version, server: server, tokens: tokens, poster: poster, generator: generator, generatorThreads: generatorThreads)
                }
                try await poster.shutdown()
            } catch {
                try? await poster.shutdown()
                throw error
            }
            try await generator.shutdownGracefully()
        }
    }

    /// The course as GeoJSON coordinates: 2.5 km north from the Arco della Pace and back, in
    /// `coursePoints` points evenly spaced (the turning point included when the count is odd).
    private var courseCoordinates: String {
        let points = (0..<coursePoints).map { index in
            let along = 2 * Double(index) / Double(coursePoints - 1)  // 0 at the start, 1 at the turn, 2 back
            return String(format: "[9.1725,%.7f]", 45.4755 + 0.0225 * (along <= 1 ? along : 2 - along))
        }
        return "[" + points.joined(separator: ",") + "]"
    }

    /// One event watched with protocol `version`: set-up, the race, the figures.
    private func scenario(
        version: Int, server: BenchServer, tokens: [String], poster: HTTPClient, generator: MultiThreadedEventLoopGroup, generatorThreads: [Int]
    ) async throws {
        print("— protocol version \(version)\(version == 1 ? " (baseline)" : "")")
        // A 5 km out-and-back course from the Arco della Pace, starting once everyone is in.
        let course = try GeoPath(points: [GeoPoint(latitude: 45.4755, longitude: 9.1725), GeoPoint(latitude: 45.4755 + 0.0225, longitude: 9.1725)])
        let lead = 20 + Double(runners + spectators) / 250
        let startsAt = Date().addingTimeInterval(lead).addingTimeInterval(-Date().timeIntervalSince1970.truncatingRemainder(dividingBy: 1))
        let (created, event) = try await server.send(
            .POST, "/api/users/runs", token: tokens[runners],
            json: """
                {"name":"Bench v\(version)","startsAt":"\(startsAt.wireTime)","endsAt":"\(startsAt.addingTimeInterval(7200).wireTime)",
                 "enrolmentDeadline":"\(startsAt.wireTime)","maxParticipants":\(runners),
                 "path":{"type":"LineString","coordinates":\(courseCoordinates)}}
                """)
        guard created == .created, let id = event["id"] as? String else { throw ValidationError("event not created: \(created)") }
        let runnerIds = try await BenchServer.concurrently(runners, 16) { index -> String in
            let (status, body) = try await server.send(
                .POST, "/api/users/runs/\(id)/enrolment", token: tokens[index], json: #"{"displayName":"R\#(index)"}"#)
            guard status == .created, let runner = body["runnerId"] as? String else { throw ValidationError("enrolment \(index): \(status)") }
            return runner
        }

        let tally = LiveTally(version: version)
        let watchers = (0..<spectators).map { index in
            var query = version == 1 ? "?v=1" : ""
            var followed: [Int] = []
            if follow > 0 {
                followed = (0..<follow).map { (index &* 7919 &+ $0 &* 104_729) % runners }
                query = "?follow=" + followed.map { runnerIds[$0] }.joined(separator: ",") + "&fieldEveryMs=\(fieldEvery.milliseconds)"
            }
            return LiveWatcher(
                group: generator, host: "127.0.0.1", port: server.ports[index % 2], path: "/api/runs/\(id)/live" + query, measuring: index < measured,
                following: followed.map { runnerIds[$0] }, tally: tally)
        }
        let connecting = ContinuousClock.now
        while watchers.contains(where: { !$0.connected }) || tally.roster.withLock({ $0.isEmpty }) && version == 2 {
            guard ContinuousClock.now - connecting < .seconds(120) else {
                throw ValidationError("only \(watchers.filter(\.connected).count) spectators connected")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        print(String(format: "set-up: %d spectators connected in %.1f s", spectators, (ContinuousClock.now - connecting).inSeconds))
        // Version 2 names runners by index: the bench keys what it posts the way spectators read it.
        let indexOf = Dictionary(tally.roster.withLock { $0 }.enumerated().map { ($1, $0) }) { first, _ in first }
        let keys = runnerIds.map { version == 1 ? $0 : String(indexOf[$0] ?? -1) }
        guard startsAt.timeIntervalSinceNow > 0 else { throw ValidationError("set-up took longer than the lead of \(lead) s: the race has started") }
        try await Task.sleep(until: .now + .seconds(max(0, startsAt.timeIntervalSinceNow) + 0.3))

        // Runner i runs at 2.5–4.5 m/s; round r's fix (at start + (r + 1) × fix-every) is posted at
        // begin + (r + i/n) × fix-every to the first instance.
        let speeds = (0..<runners).map { 2.5 + 2.0 * Double($0) / Double(max(1, runners - 1)) }
        let every = Double(fixEvery.milliseconds) / 1000
        let rounds = max(1, Int(exactly: (Double(seconds) / every).rounded(.down)) ?? 1)
        if profile != nil { SamplingProfiler.start() }
        let start = LiveReading.now(watchers, generatorThreads: generatorThreads), begin = start.at
        let next = WorkCounter()
        // The measured rounds, then one more that every spectator checks (below): checking means
        // reading every runner's state in every message, work no real spectator's phone does on
        // this machine, so the figures are taken over the measured rounds only.
        let runnerCount = runners, total = runners * (rounds + 1)
        let sampler = Task { [timeline] in
            guard timeline else { return }
            var last = (machineBusySeconds() ?? 0, machineStolenSeconds() ?? 0, LiveReading.counts(of: watchers))
            while !Task.isCancelled {
                try? await Task.sleep(until: begin + .seconds(tally.machineTimeline.withLock { $0.count } + 1))
                let now = (machineBusySeconds() ?? 0, machineStolenSeconds() ?? 0, LiveReading.counts(of: watchers))
                tally.machineTimeline.withLock {
                    $0.append((now.0 - last.0, now.1 - last.1, now.2.messages - last.2.messages, now.2.bytes - last.2.bytes))
                }
                last = now
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<128 {
                group.addTask {
                    while case let k = next.take(), k < total {
                        let (round, runner) = (k / runnerCount, k % runnerCount)
                        let due = begin + .seconds(Double(k) / Double(runnerCount) * every)
                        if ContinuousClock.now < due { try await Task.sleep(until: due) }
                        let checked = round == rounds
                        if checked, !tally.checking {
                            let end = LiveReading.now(watchers, generatorThreads: generatorThreads)
                            let profiled = try profile.map { try SamplingProfiler.stop(writingTo: $0) }
                            tally.window.withLock { $0 = $0 ?? (end, profiled) }
                        }
                        let offset = Double(round + 1) * every
                        let time = startsAt.addingTimeInterval(offset)
                        let point = course.point(at: speeds[runner] * offset)
                        let stamp = time.wireTime
                        let key = keys[runner] + "|" + (version == 1 ? stamp : String(Int(exactly: (offset * 10).rounded()) ?? 0))
                        let postedAt = ContinuousClock.now
                        if !checked { tally.posted(key, at: postedAt, since: begin) }
                        let period = fieldEvery.milliseconds
                        let now = Int(exactly: (Date().timeIntervalSince1970 * 1_000).rounded(.down)) ?? 0
                        let quarter = period > 0 ? now % period * 4 / period : 0
                        var request = HTTPClientRequest(url: server.base + "/api/users/runs/\(id)/positions")
                        request.method = .POST
                        request.headers.add(name: "Authorization", value: "Bearer \(tokens[runner])")
                        request.headers.add(name: "Content-Type", value: "application/json")
                        request.body = .bytes(
                            ByteBuffer(
                                string:
                                    #"{"positions":[{"latitude":\#(point.latitude),"longitude":\#(point.longitude),"accuracy":5,"time":"\#(stamp)"}]}"#
                            ))
                        let response = try await poster.execute(request, timeout: .seconds(60))
                        _ = try await response.body.collect(upTo: 1 << 20)
                        if response.status != .ok { tally.failed.withLock { $0 += 1 } }
                        let answeredAt = ContinuousClock.now
                        let postLatency = (answeredAt - postedAt).inSeconds * 1000
                        if checked {
                            tally.finalKeys.withLock { $0[runner] = key }
                            continue
                        }
                        tally.answered(key, at: answeredAt)
                        tally.postLatencies.withLock { $0.append(postLatency) }
                        tally.postLatenciesByQuarter.withLock { $0[quarter].append(postLatency) }
                        if timeline { tally.postTimeline.withLock { $0.append((LiveTally.second(of: postedAt, since: begin), postLatency)) } }
                    }
                }
            }
            try await group.waitForAll()
        }
        sampler.cancel()
        guard let (end, profiled) = tally.window.withLock({ $0 }) else { throw ValidationError("the checked round was not posted") }
        let streamed = end.at - begin, (cpu, machine) = end.cpu.since(start.cpu)
        let generatorCPU = end.generator - start.generator
        if let profile, let profiled { print("profile: \(profiled) samples written to \(profile)") }
        let delivered = end.delivered - start.delivered
        try await Task.sleep(for: .seconds(3 + Double(fieldEvery.milliseconds) / 1000))  // the last updates, and the field's
        let open = watchers.filter(\.open).count
        for watcher in watchers { watcher.stop() }

        let finals = tally.finalKeys.withLock { $0 }
        var missing = 0
        for watcher in watchers {
            let seen = watcher.finalStates()
            for (_, key) in finals {
                let parts = key.split(separator: "|", maxSplits: 1)
                if seen[String(parts[0])] != String(parts[1]) { missing += 1 }
            }
        }
        let deliveries = tally.deliveries()
        let latencies = deliveries.latencies.sorted(), afterAnswer = deliveries.afterAnswer.sorted()
        let messages = end.messages - start.messages, bytes = end.bytes - start.bytes
        let (stateBytes, stateCount, largest) = watchers.prefix(measured).reduce((0, 0, 0)) {
            ($0.0 + $1.stateBytes, $0.1 + $1.measuredStates, max($0.2, $1.largestState))
        }
        let seconds = streamed.inSeconds, cores = ProcessInfo.processInfo.activeProcessorCount
        print(
            String(
                format: "posted %d positions in %.1f s (%.0f/s), then a round of %d that every spectator checks (not measured); %d failed",
                runners * rounds, seconds, Double(runners * rounds) / seconds, runners, tally.failed.withLock { $0 }))
        let posts = tally.postLatencies.withLock { $0 }.sorted()
        print(
            String(
                format: "post round trip (fix stored, announcement queued): p50 %.1f ms   p99 %.1f ms", percentile(posts, 0.5),
                percentile(posts, 0.99)))
        if follow > 0, fieldEvery.milliseconds > 0 {
            let quarters = tally.postLatenciesByQuarter.withLock { $0 }.map { $0.sorted() }
            print(
                "post round trip by the quarter of the field's period it was sent in, p50 / p99 (ms): "
                    + quarters.map { String(format: "%.1f / %.1f", percentile($0, 0.5), percentile($0, 0.99)) }.joined(separator: ", "))
        }
        if timeline {
            let posted = Dictionary(grouping: tally.postTimeline.withLock { $0 }, by: \.second)
            let machineBySecond = tally.machineTimeline.withLock { $0 }
            for second in 0..<(machineBySecond.count) {
                let these = (posted[second] ?? []).map(\.latency).sorted(), delivered = (deliveries.bySecond[second] ?? []).sorted()
                print(
                    String(
                        format:
                            "second %2d: %4d posts, round trip p50 %6.1f p99 %6.1f max %6.1f ms; delivered p50 %6.1f p99 %6.1f ms; %6d messages, %5.1f MB; machine %.2f cores (stolen %.2f)",
                        second, these.count, percentile(these, 0.5), percentile(these, 0.99), these.last ?? .nan, percentile(delivered, 0.5),
                        percentile(delivered, 0.99), machineBySecond[second].messages, Double(machineBySecond[second].bytes) / 1e6,
                        machineBySecond[second].busy, machineBySecond[second].stolen))
            }
        }
        print(
            String(
                format: "fix posted → update received (%d measuring spectators, %d samples%@): p50 %.1f ms   p99 %.1f ms   max %.1f ms", measured,
                latencies.count, follow > 0 ? ", followed runners" : "", percentile(latencies, 0.5), percentile(latencies, 0.99),
                latencies.last ?? .nan))
        print(
            String(
                format: "  of it after the post's answer (announcement, hubs' batches, fan-out): p50 %.1f ms   p99 %.1f ms   max %.1f ms",
                percentile(afterAnswer, 0.5), percentile(afterAnswer, 0.99), afterAnswer.last ?? .nan))
        print(
            String(
                format: "messages delivered to spectators: %d (%.0f/s, %.1f MB/s), runner updates delivered: %d (%.0f/s)", messages,
                Double(messages) / seconds, Double(bytes) / seconds / 1e6, delivered, Double(delivered) / seconds))
        print(
            String(
                format: "bytes per runner update on the wire: %.1f average, %d largest (%d updates read by the measuring spectators)",
                Double(stateBytes) / Double(max(1, stateCount)), largest, stateCount))
        let serverCPU = cpu - generatorCPU
        print(
            String(
                format:
                    "CPU while posting, in cores of %d: servers %.2f (this process but the load generator's event loops), load generator %.2f, whole machine %.2f (PostgreSQL included; of it %.2f stolen by the hypervisor for other machines)",
                cores, serverCPU / seconds, generatorCPU / seconds, machine / seconds,
                ((end.stolen ?? .nan) - (start.stolen ?? .nan)) / seconds))
        print(String(format: "servers' CPU per delivered runner update: %.2f µs", serverCPU / Double(max(1, delivered)) * 1e6))
        print("spectators still connected at the end: \(open) of \(spectators)")
        let reasons = Dictionary(grouping: watchers.compactMap(\.lostBecause), by: { $0 }).mapValues(\.count)
        for (reason, count) in reasons.sorted(by: { $0.value > $1.value }) { print("  lost \(count): \(reason)") }
        print("final states missing: \(missing) of \(finals.count * spectators) (runner × spectator)")
        let label =
            "v\(version), \(runners) runners every \(fixEvery), \(spectators) spectators"
            + (follow > 0 ? " following \(follow), field every \(fieldEvery)" : "")
        BenchSummary.record(
            "live", "\(label): fix posted → update received, p50 / p99 (ms)", format: "%.1f / %.1f", percentile(latencies, 0.5),
            percentile(latencies, 0.99))
        BenchSummary.record(
            "live", "\(label): bytes per runner update; servers' µs per delivered update", format: "%.1f; %.2f",
            Double(stateBytes) / Double(max(1, stateCount)), serverCPU / Double(max(1, delivered)) * 1e6)
        BenchSummary.record("live", "\(label): final states missing", "\(missing)")
    }
}

/// A duration given as `5s`, `500ms` or `1m`.
struct BenchDuration: ExpressibleByArgument, CustomStringConvertible, Sendable {
    let milliseconds: Int

    init(milliseconds: Int) {
        self.milliseconds = milliseconds
    }

    init?(argument: String) {
        let units: [(String, Int)] = [("ms", 1), ("s", 1_000), ("m", 60_000)]
        guard let (suffix, scale) = units.first(where: { argument.hasSuffix($0.0) }), let value = Double(argument.dropLast(suffix.count)),
            let milliseconds = Int(exactly: (value * Double(scale)).rounded()), milliseconds >= 0
        else { return nil }
        self.milliseconds = milliseconds
    }

    var description: String { milliseconds % 1_000 == 0 ? "\(milliseconds / 1_000) s" : "\(milliseconds) ms" }
}

/// What the posting side and the measuring spectators note down. A state's key is
/// `runner|time`: in version 1 the runner's id and the fix's time as written; in version 2 the
/// runner's index and the tenths of a second since the epoch.
final class LiveTally: Sendable {
    let version: Int
    /// Key → when its post began, and in which second from the start.
    let sent = Mutex<[String: (at: ContinuousClock.Instant, second: Int)]>([:])
    /// Key → when its post's answer arrived (the fix stored, its announcement queued).
    let answers = Mutex<[String: ContinuousClock.Instant]>([:])
    /// Each measured delivery: its key and when it arrived (the figures are taken at the end,
    /// when every post's answer is in).
    let arrivals = Mutex<[(key: String, at: ContinuousClock.Instant)]>([])
    /// Each post's round trip (ms): the part of the delivery latency spent before the fix is stored.
    let postLatencies = Mutex<[Double]>([])
    /// With a field period: each post's round trip by the quarter of the period it was sent in,
    /// on the hub's grid without offsets (the wall clock from the Unix epoch: where every
    /// follower's field was due before the hub spread them over the period's slots), to see
    /// whether the field's messages hold the posts up. With the spread, the quarters are alike.
    let postLatenciesByQuarter = Mutex<[[Double]]>(Array(repeating: [], count: 4))
    /// Where the measured rounds ended, and the profile's samples; set when the checked round
    /// begins.
    let window = Mutex<(end: LiveReading, profiled: Int?)?>(nil)
    /// The checked round has begun: every spectator reads every state.
    var checking: Bool { window.withLock { $0 != nil } }
    /// With `--timeline`: each post's second from the start (`second(of:since:)`) and round trip (ms).
    let postTimeline = Mutex<[(second: Int, latency: Double)]>([])
    /// With `--timeline`: the machine's busy seconds in each second from the start, of them the
    /// seconds the hypervisor gave to other machines, and the messages and bytes the spectators
    /// received in that second.
    let machineTimeline = Mutex<[(busy: Double, stolen: Double, messages: Int, bytes: Int)]>([])
    let failed = Mutex(0)
    /// Each runner's last fix (by runner number).
    let finalKeys = Mutex<[Int: String]>([:])
    /// Version 2: the runners' ids by index, from the first measuring spectator's snapshot.
    let roster = Mutex<[String]>([])

    init(version: Int) {
        self.version = version
    }

    /// Notes that `key`'s post began at `instant`, in its second from `begin`.
    func posted(_ key: String, at instant: ContinuousClock.Instant, since begin: ContinuousClock.Instant) {
        sent.withLock { $0[key] = (instant, Self.second(of: instant, since: begin)) }
    }

    /// The whole second from `begin` that `instant` falls in (-1 out of range): how the timeline
    /// groups both the posts and their deliveries.
    static func second(of instant: ContinuousClock.Instant, since begin: ContinuousClock.Instant) -> Int {
        Int(exactly: (instant - begin).inSeconds.rounded(.down)) ?? -1
    }

    func answered(_ key: String, at instant: ContinuousClock.Instant) {
        answers.withLock { $0[key] = instant }
    }

    /// Notes a delivery of `key` that arrived at `arrived`.
    func delivered(_ key: String, at arrived: ContinuousClock.Instant) {
        arrivals.withLock { $0.append((key, arrived)) }
    }

    /// The deliveries' latencies (ms from the post's start), the same by the second the post was
    /// sent in, and each delivery's time from its post's answer (negative when the update arrived
    /// before the answer): the part after the fix was stored (the announcement, both hubs'
    /// batches and the fan-out).
    func deliveries() -> (latencies: [Double], bySecond: [Int: [Double]], afterAnswer: [Double]) {
        let (sent, answers) = (self.sent.withLock { $0 }, self.answers.withLock { $0 })
        var result: (latencies: [Double], bySecond: [Int: [Double]], afterAnswer: [Double]) = ([], [:], [])
        for (key, arrived) in arrivals.withLock({ $0 }) {
            guard let post = sent[key] else { continue }
            let latency = (arrived - post.at).inSeconds * 1000
            result.latencies.append(latency)
            result.bySecond[post.second, default: []].append(latency)
            if let answered = answers[key] { result.afterAnswer.append((arrived - answered).inSeconds * 1000) }
        }
        return result
    }
}

/// What the figures of the measured rounds are differences of, read at their start and end.
struct LiveReading: Sendable {
    let at: ContinuousClock.Instant
    let cpu: CPUTime
    /// The load generator's CPU seconds, and the machine's stolen ones (nil without `/proc/stat`).
    let generator: Double
    let stolen: Double?
    /// Runner updates, messages and bytes the spectators received so far.
    let delivered: Int
    let messages: Int
    let bytes: Int

    static func now(_ watchers: [LiveWatcher], generatorThreads: [Int]) -> LiveReading {
        let counts = counts(of: watchers)
        return LiveReading(
            at: .now, cpu: .now, generator: ThreadCPU.seconds(of: generatorThreads), stolen: machineStolenSeconds(),
            delivered: counts.states, messages: counts.messages, bytes: counts.bytes)
    }

    /// Runner updates, messages and bytes every spectator received so far.
    static func counts(of watchers: [LiveWatcher]) -> (states: Int, messages: Int, bytes: Int) {
        watchers.reduce((0, 0, 0)) { total, watcher in
            let counts = watcher.counts
            return (total.0 + counts.states, total.1 + counts.messages, total.2 + counts.bytes)
        }
    }
}

/// One spectator: a WebSocket client on the live view, handling frames on its event loop (a
/// plain NIO pipeline on the load generator's own event loops: thousands of clients share the
/// machine with the servers they measure, so the load generator must cost as little as a browser
/// elsewhere would). Messages are single text frames; a measuring spectator parses each, the
/// others count messages and runner updates and, once the final positions are being posted, note
/// each runner's newest time (a byte scan, not a JSON parse).
final class LiveWatcher: Sendable {
    private struct State {
        var connected = false
        var messages = 0
        var bytes = 0
        /// Runner updates received (every spectator), and the bytes of those a measuring one read.
        var states = 0
        var measuredStates = 0
        var stateBytes = 0
        var largestState = 0
        /// Each runner's newest fix in the final phase: version 1 by id (the time as written),
        /// version 2 by index (tenths of a second, -1 for none yet: every spectator notes every
        /// state then, so an array rather than a dictionary to hash into).
        var newest: [String: String] = [:]
        var newestTenths: [Int] = []
        var channel: (any Channel)?
    }

    private let state = Mutex(State())
    private let measuring: Bool
    private let tally: LiveTally
    /// Runner and time of the states already measured (a state re-sent in a field message, or
    /// because a rank changed, is not a new delivery).
    private let measured = Mutex(Set<String>())
    /// The runners followed (ids; version 2 only): only their latency is measured.
    private let following: [String]

    init(group: any EventLoopGroup, host: String, port: Int, path: String, measuring: Bool, following: [String] = [], tally: LiveTally) {
        self.measuring = measuring
        self.following = following
        self.tally = tally
        let bootstrap = ClientBootstrap(group: group).channelInitializer { [self] channel in
            channel.eventLoop.makeCompletedFuture {
                let upgrader = NIOTypedWebSocketClientUpgrader<Void>(maxFrameSize: 1 << 26) { channel, _ in
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
    /// Runner updates, messages and bytes received, read together.
    var counts: (states: Int, messages: Int, bytes: Int) { state.withLock { ($0.states, $0.messages, $0.bytes) } }
    /// Runner updates a measuring spectator read, their bytes, and the largest.
    var measuredStates: Int { state.withLock { $0.measuredStates } }
    var stateBytes: Int { state.withLock { $0.stateBytes } }
    var largestState: Int { state.withLock { $0.largestState } }
    var open: Bool { state.withLock { $0.channel?.isActive ?? false } }

    func stop() {
        state.withLock { $0.channel?.close(promise: nil) }
    }

    /// Each runner's newest time among the messages received after the final positions began,
    /// keyed as `LiveTally` keys them.
    func finalStates() -> [String: String] {
        state.withLock { state in
            tally.version == 1
                ? state.newest
                : Dictionary(
                    uniqueKeysWithValues: state.newestTenths.enumerated().filter { $0.element >= 0 }.map { (String($0.offset), String($0.element)) })
        }
    }

    /// Why the connection ended early, if it did.
    var lostBecause: String? { lostReason.withLock { $0 } }
    private let lostReason = Mutex<String?>(nil)

    fileprivate func lost(_ reason: String) {
        lostReason.withLock { $0 = $0 ?? reason }
    }

    fileprivate func received(_ message: ByteBuffer) {
        let arrived = ContinuousClock.now
        let finalPhase = tally.checking
        let bytes = message.readableBytesView
        let isUpdate = bytes.starts(with: Self.updatePrefix)
        if tally.version == 2, measuring, !isUpdate, bytes.starts(with: Self.snapshotPrefix) { noteRoster(message) }
        // Keys and sizes of the runner updates, where this spectator reads them (version 2: the
        // keys of followed runners only, whose latency is measured).
        var keys: [String] = [], tenths: [(index: Int, tenths: Int, bytes: Int)] = [], sizes: [Int] = []
        var count = 0
        if tally.version == 1 {
            if measuring || finalPhase {
                let states = Self.runnerTimes(in: message)
                keys = states.map { $0.0 + "|" + $0.1 }
                count = isUpdate ? states.count : 0
            } else if isUpdate {
                count = Self.occurrences(of: Self.timeKey, in: message)
            }
            if measuring, isUpdate, count > 0, let runners = Self.v1RunnersLength(message) { sizes = [runners / count] }
        } else if isUpdate {
            if measuring || finalPhase {
                tenths = Self.compactStates(in: message)
                if measuring {
                    let followed = followedIndices
                    keys = tenths.lazy.filter { followed?.contains($0.index) ?? true }.map { "\($0.index)|\($0.tenths)" }
                    sizes = tenths.map(\.bytes)
                }
                count = tenths.count
            } else {
                count = Self.compactStateCount(in: message)
            }
        }
        state.withLock { state in
            state.messages += 1
            state.bytes += message.readableBytes
            state.states += count
            if measuring, isUpdate {
                state.measuredStates += tally.version == 1 ? count : sizes.count
                state.stateBytes += tally.version == 1 ? (sizes.first ?? 0) * count : sizes.reduce(0, +)
                state.largestState = max(state.largestState, sizes.max() ?? 0)
            }
            guard finalPhase else { return }
            if tally.version == 1 {
                for key in keys {
                    let parts = key.split(separator: "|", maxSplits: 1).map(String.init)
                    if state.newest[parts[0]].map({ parts[1] > $0 }) ?? true { state.newest[parts[0]] = parts[1] }
                }
            } else {
                for (index, time, _) in tenths where (0..<(1 << 20)).contains(index) {
                    if index >= state.newestTenths.count {
                        state.newestTenths.append(contentsOf: repeatElement(-1, count: index + 1 - state.newestTenths.count))
                    }
                    if time > state.newestTenths[index] { state.newestTenths[index] = time }
                }
            }
        }
        // Updates only: a snapshot re-sends states delivered before.
        guard measuring, isUpdate else { return }
        for key in keys {
            guard measured.withLock({ $0.insert(key).inserted }) else { continue }
            tally.delivered(key, at: arrived)
        }
    }

    /// Version 2: the followed runners' indices (nil: every runner is measured), once the roster is known.
    private var followedIndices: Set<Int>? {
        guard !following.isEmpty else { return nil }
        return followedIndexSet.withLock { indices in
            if indices == nil {
                let roster = tally.roster.withLock { $0 }
                guard !roster.isEmpty else { return [] }
                indices = Set(following.compactMap { roster.firstIndex(of: $0) })
            }
            return indices
        }
    }

    private let followedIndexSet = Mutex<Set<Int>?>(nil)

    /// Version 2: the roster of a snapshot (`runners`: `[id, name]` by index), for the bench's keys.
    private func noteRoster(_ message: ByteBuffer) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(message.readableBytesView)) as? [String: Any],
            let runners = object["runners"] as? [[String]]
        else { return }
        let ids = runners.compactMap(\.first)
        tally.roster.withLock { if $0.isEmpty { $0 = ids } }
    }

    private static let updatePrefix = Array(#"{"type":"update""#.utf8)
    private static let snapshotPrefix = Array(#"{"type":"snapshot""#.utf8)
    private static let compactRunners = Array(#"{"type":"update","runners":["#.utf8)

    /// Version 2: each state of an update's `runners` — `[index,lat,lon,metres,tenths,pace,flags]`
    /// — as its index, its tenths and its bytes on the wire (with the comma that separates it).
    static func compactStates(in buffer: ByteBuffer) -> [(index: Int, tenths: Int, bytes: Int)] {
        buffer.readableBytesView.withUnsafeBytes { bytes -> [(index: Int, tenths: Int, bytes: Int)] in
            guard bytes.starts(with: compactRunners) else { return [] }
            var found: [(index: Int, tenths: Int, bytes: Int)] = []
            var cursor = compactRunners.count
            var numbers: [Int] = []
            numbers.reserveCapacity(7)
            while cursor < bytes.count, bytes[cursor] == UInt8(ascii: "[") {
                let begin = cursor
                cursor += 1
                numbers.removeAll(keepingCapacity: true)
                var value = 0, negative = false
                scan: while cursor < bytes.count {
                    let byte = bytes[cursor]
                    cursor += 1
                    switch byte {
                    case UInt8(ascii: "-"): negative = true
                    case UInt8(ascii: "0")...UInt8(ascii: "9"): value = value &* 10 &+ Int(byte &- UInt8(ascii: "0"))
                    case UInt8(ascii: ","), UInt8(ascii: "]"):
                        numbers.append(negative ? -value : value)
                        (value, negative) = (0, false)
                        if byte == UInt8(ascii: "]") { break scan }
                    default: break
                    }
                }
                if numbers.count == 7 { found.append((numbers[0], numbers[4], cursor - begin + 1)) }
                guard cursor < bytes.count, bytes[cursor] == UInt8(ascii: ",") else { break }
                cursor += 1
            }
            return found
        }
    }

    /// Version 2: how many states an update carries — its `[` less those of `runners`, `ranks`,
    /// and `moves`, `order` and `leaders` where present (a count, not a parse: every spectator
    /// does it for every message).
    static func compactStateCount(in buffer: ByteBuffer) -> Int {
        let brackets = occurrences(of: [UInt8(ascii: "[")], in: buffer)
        let lists = optionalLists.reduce(2) { count, key in count + (occurrences(of: key, in: buffer) > 0 ? 1 : 0) }
        return max(0, brackets - lists)
    }

    private static let optionalLists = [#""moves""#, #""order""#, #""leaders""#].map { Array($0.utf8) }

    /// How often `needle` occurs in `buffer`.
    static func occurrences(of needle: [UInt8], in buffer: ByteBuffer) -> Int {
        buffer.readableBytesView.withUnsafeBytes { bytes -> Int in
            var count = 0, cursor = 0
            while let hit = find(needle, in: bytes, from: cursor) {
                count += 1
                cursor = hit + needle.count
            }
            return count
        }
    }

    /// Where `needle` next occurs from `start` (memchr to its first byte, then memcmp: glibc's
    /// memmem is not visible from Swift).
    static func find(_ needle: [UInt8], in bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        guard let base = bytes.baseAddress, let first = needle.first else { return nil }
        var cursor = start
        while cursor + needle.count <= bytes.count, let hit = memchr(base + cursor, Int32(first), bytes.count - cursor) {
            let offset = base.distance(to: UnsafeRawPointer(hit))
            if offset + needle.count <= bytes.count, memcmp(base + offset, needle, needle.count) == 0 { return offset }
            cursor = offset + 1
        }
        return nil
    }

    /// Version 1: the bytes of an update's `runners` array (between `"runners":` and `,"ranks":`).
    static func v1RunnersLength(_ buffer: ByteBuffer) -> Int? {
        buffer.readableBytesView.withUnsafeBytes { bytes -> Int? in
            find(Self.ranksKey, in: bytes, from: 0).map { $0 - Self.updatePrefix.count - #","runners":"#.utf8.count }
        }
    }

    private static let ranksKey = Array(#","ranks":"#.utf8)

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
    fileprivate static let timeKey = Array(#","time":""#.utf8)
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
