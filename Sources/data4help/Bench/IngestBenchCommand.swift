import ArgumentParser
import AsyncHTTPClient
import Data4HelpCore
import DatabaseLink
import Foundation
import HTTPAPI
import HealthSharing
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import Prometheus
import SOSManager
import ServiceLifecycle
import Synchronization
import ZlibCoding

/// `data4help bench ingest`: heart-rate uploads at 1 Hz from many individuals, over HTTP with a few
/// concurrent clients, against the real server and a fresh embedded PostgreSQL, alternated with
/// the same rows written straight through the same SQL (no HTTP, no JSON) for the database's
/// ceiling: `--rounds` pairs, each on its own stretch of time, the order swapped every round, and
/// the ratio taken per pair. One phase lasts a few seconds, and single phases minutes apart moved
/// the ratio between 63 and 94 % for one build; a pair shares whatever the machine was doing.
/// Then the same uploads of the last hours three times: as they are, with everyone enrolled in
/// AutomatedSOS (the detector reads each upload's context), and with 1,000 subscribed grants (five
/// organisations, each upload an event for each).
struct IngestBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ingest", abstract: "Ingestion throughput and latency.")

    @Option(help: "Individuals uploading.") var individuals = 200
    @Option(help: "Uploads in each phase.") var batches = 600
    @Option(help: "Samples per upload.") var batchSize = 1_000
    @Option(help: "Concurrent clients.") var clients = 8
    @Option(help: "Pairs of the end-to-end phase and the database's ceiling, alternated.") var rounds = 5
    @Option(help: "Write a CPU profile of this process during the first round's end-to-end phase to this file (Tools/profile-report.py reads it).")
    var profile: String?
    @Flag(help: "Only decode and validate the uploads, in this process: no server, no database (seconds, for profiling the reader).")
    var decodingOnly = false

    func validate() throws {
        guard individuals > 0, batches > 0, batchSize > 0, clients > 0, rounds > 0, rounds <= 20 else {
            throw ValidationError("--individuals, --batches, --batch-size and --clients must be positive, --rounds 1 to 20")
        }
        // The oldest upload starts (2 × rounds + 3) × span + 600 s ago (span = (uploads per
        // individual + 1) × batch size); it must be younger than DataManager.settledAfter (49
        // hours), so that every phase writes what live uploads write.
        guard batchSize <= 10_000, (2 * rounds + 3) * (batches / individuals + 1) * batchSize <= 172_000 else {
            throw ValidationError(
                "the uploads must stay within the last 49 hours: (2 × --rounds + 3) × (--batches / --individuals + 1) × --batch-size at most 172000"
            )
        }
    }

    func run() async throws {
        if decodingOnly { return try reportDecodingOnly() }
        try await BenchServer.run { server in
            print("data4help bench ingest — \(batches) uploads × \(batchSize) heart-rate samples, \(individuals) individuals, \(clients) clients")
            let tokens = try await BenchServer.concurrently(individuals, clients) { try await server.individualSession($0) }
            let decoding = (
                items: try decodePhase(makeBodies(secondsAgo: roundSecondsAgo(0), prefix: "m0.")),
                series: try decodePhase(makeSeriesBodies(secondsAgo: roundSecondsAgo(0))),
                gzip: try decodePhase(makeBodies(secondsAgo: roundSecondsAgo(0), prefix: "m0.").map(Self.gzipped), coding: .gzip)
            )
            let pairs = try await pairedPhases(server, tokens: tokens)
            let variants = try await variantPhases(server, tokens: tokens)
            let summaries = try await summaryPhase(server.client, server.base, token: tokens[0])
            let size = try await bytesPerSample(server.databaseURL, logger: server.logger)
            let (http, ceiling) = (PhaseResult(pooling: pairs.map(\.http)), PhaseResult(pooling: pairs.map(\.raw)))
            report(pairs, http: http, raw: ceiling, decoding: decoding.items, bytesPerSample: size)
            reportSeries(pairs, raw: ceiling, decoding: decoding.series)
            try reportGzip(pairs, raw: ceiling, decoding: decoding.gzip)
            reportVariants(variants, ceiling: ceiling)
            print(
                String(
                    format: "a year of daily summaries (365 buckets), %d requests: p50 %.1f ms, p99 %.1f ms",
                    summaries.count, percentile(summaries, 0.5), percentile(summaries, 0.99)
                ))
            BenchSummary.record(
                "ingest", "a year of daily summaries, p50 / p99 (ms)", format: "%.1f / %.1f", percentile(summaries, 0.5), percentile(summaries, 0.99))
        }
    }

    struct PhaseResult {
        let samples: Int
        let elapsed: Double
        let latencies: [Double]
        /// CPU seconds of this process (the server, the load generator and the ceiling's client)
        /// and of the whole machine (nan where `/proc/stat` is missing) during the phase.
        var processCPU = Double.nan
        var machineCPU = Double.nan
        var throughput: Double { Double(samples) / elapsed }

        init(samples: Int, elapsed: Double, latencies: [Double]) {
            self.samples = samples
            self.elapsed = elapsed
            self.latencies = latencies
        }

        /// Several phases as one: their samples over their time, their latencies together.
        init(pooling phases: [PhaseResult]) {
            self.init(
                samples: phases.reduce(0) { $0 + $1.samples }, elapsed: phases.reduce(0) { $0 + $1.elapsed },
                latencies: phases.flatMap(\.latencies).sorted())
            processCPU = phases.reduce(0) { $0 + $1.processCPU }
            machineCPU = phases.reduce(0) { $0 + $1.machineCPU }
        }

        /// Microseconds of CPU per sample: this process's, and the rest of the machine's (there,
        /// PostgreSQL's).
        var cpuPerSample: (process: Double, rest: Double) {
            (1e6 * processCPU / Double(samples), 1e6 * (machineCPU - processCPU) / Double(samples))
        }
    }

    /// One round: the end-to-end phase and the database's ceiling on the same stretch of time
    /// (different individuals), one right after the other, and the same readings uploaded as
    /// series (on a stretch of their own, so that they are new) on the other side of the ceiling.
    struct Pair {
        let http: PhaseResult
        let raw: PhaseResult
        let series: PhaseResult
        /// The items' uploads gzip-coded (`Content-Encoding: gzip`), on a stretch of their own.
        let gzip: PhaseResult
        var ratio: Double { http.throughput / raw.throughput }
    }

    /// Seconds one phase's uploads cover per individual.
    private var span: Double { Double(batches / individuals + 1) * Double(batchSize) }

    /// Where round `round`'s stretch starts: before the three variant phases' stretches, the
    /// first round oldest.
    private func roundSecondsAgo(_ round: Int) -> Double { Double(rounds + 3 - round) * span + 600 }

    /// Where round `round`'s series phase uploads: before every round's stretch.
    private func seriesSecondsAgo(_ round: Int) -> Double { Double(2 * rounds + 3 - round) * span + 600 }

    /// Where round `round`'s gzip-coded items upload: before every series phase's stretch.
    private func gzipSecondsAgo(_ round: Int) -> Double { Double(3 * rounds + 3 - round) * span + 600 }

    /// An upload as a phone that compresses it sends it.
    private static func gzipped(_ body: ByteBuffer) throws -> ByteBuffer {
        guard let coded = ZlibDeflate.compress(Array(body.readableBytesView), format: .gzip) else {
            throw ValidationError("zlib could not compress an upload (out of memory?)")
        }
        return ByteBuffer(bytes: coded)
    }

    /// `rounds` pairs, the items' end-to-end phase first in even rounds and the series' first in
    /// odd ones, the ceiling between them with the gzip-coded items next to it on the other
    /// side, so that none always runs on the emptier tables or the warmer caches. Each round's
    /// uploads are built before it starts (not timed).
    private func pairedPhases(_ server: BenchServer, tokens: [String]) async throws -> [Pair] {
        let database = Database(configuration: server.databaseURL.clientConfiguration(maximumConnections: clients + 2), logger: server.logger)
        return try await database.whileRunning {
            let rawIndividuals = try await BenchServer.insertIndividuals(individuals, named: "raw", database: database)
            var pairs: [Pair] = []
            for round in 0..<rounds {
                let secondsAgo = roundSecondsAgo(round)
                let bodies = makeBodies(secondsAgo: secondsAgo, prefix: "m\(round).")
                let columns = rawColumns(secondsAgo: secondsAgo, prefix: "m\(round).")
                let seriesBodies = makeSeriesBodies(secondsAgo: seriesSecondsAgo(round))
                let gzipBodies = try makeBodies(secondsAgo: gzipSecondsAgo(round), prefix: "g\(round).").map(Self.gzipped)
                let http: PhaseResult
                let raw: PhaseResult
                let series: PhaseResult
                let gzip: PhaseResult
                if round.isMultiple(of: 2) {
                    if round == 0, profile != nil { SamplingProfiler.start() }
                    http = try await httpPhase(server.client, server.base, tokens: tokens, bodies: bodies)
                    if round == 0, let profile { print("profile: \(try SamplingProfiler.stop(writingTo: profile)) samples written to \(profile)") }
                    raw = try await rawPhase(database, individuals: rawIndividuals, columns: columns)
                    gzip = try await httpPhase(server.client, server.base, tokens: tokens, bodies: gzipBodies, coding: "gzip")
                    series = try await httpPhase(server.client, server.base, tokens: tokens, bodies: seriesBodies)
                } else {
                    series = try await httpPhase(server.client, server.base, tokens: tokens, bodies: seriesBodies)
                    gzip = try await httpPhase(server.client, server.base, tokens: tokens, bodies: gzipBodies, coding: "gzip")
                    raw = try await rawPhase(database, individuals: rawIndividuals, columns: columns)
                    http = try await httpPhase(server.client, server.base, tokens: tokens, bodies: bodies)
                }
                pairs.append(Pair(http: http, raw: raw, series: series, gzip: gzip))
            }
            return pairs
        }
    }

    /// The first sample of every upload: individual i's k-th upload covers the k-th stretch of
    /// `batchSize` seconds from `secondsAgo`, so uploads never overlap and all are accepted. The
    /// rounds upload from `roundSecondsAgo(round)`, the variant phases after them: recent hours,
    /// stored in minute blocks as live uploads are (a settled hour, older than
    /// `DataManager.settledAfter`, goes into an hour block).
    private func batchStart(_ batch: Int, secondsAgo: Double) -> Date {
        let origin = (Date().timeIntervalSince1970 - secondsAgo).rounded(.down)
        return Date(timeIntervalSince1970: origin + Double((batch / individuals) * batchSize))
    }

    /// The uploads as a phone sends them: JSON with client ids (`prefix` keeps each phase's new),
    /// one individual's 1 Hz stretch each.
    private func makeBodies(secondsAgo: Double, prefix: String = "b") -> [ByteBuffer] {
        let formatter = ISO8601DateFormatter()
        return (0..<batches).map { batch in
            let start = batchStart(batch, secondsAgo: secondsAgo)
            var json = #"{"items":["#
            json.reserveCapacity(batchSize * 110)
            for second in 0..<batchSize {
                if second > 0 { json += "," }
                json +=
                    #"{"id":"\#(prefix)\#(batch)-\#(second)","type":"heartRate","value":\#(55 + (batch * 7 + second) % 60),"unit":"bpm","start":"\#(formatter.string(from: start.addingTimeInterval(Double(second))))"}"#
            }
            json += "]}"
            return ByteBuffer(string: json)
        }
    }

    /// The same readings as `makeBodies`, each upload one series (`series` in the contract): a
    /// start, the interval, and the values, as a watch's 1 Hz recording is sent without ids.
    private func makeSeriesBodies(secondsAgo: Double) -> [ByteBuffer] {
        let formatter = ISO8601DateFormatter()
        return (0..<batches).map { batch in
            let values = (0..<batchSize).map { String(55 + (batch * 7 + $0) % 60) }.joined(separator: ",")
            let start = formatter.string(from: batchStart(batch, secondsAgo: secondsAgo))
            return ByteBuffer(string: #"{"series":[{"type":"heartRate","unit":"bpm","start":"\#(start)","intervalMs":1000,"values":[\#(values)]}]}"#)
        }
    }

    /// One individual gets a heart-rate sample on each of the last 365 days (late data, one
    /// upload); then the latency of asking for a year of daily summaries, 50 times.
    private func summaryPhase(_ client: HTTPClient, _ base: String, token: String) async throws -> [Double] {
        let formatter = ISO8601DateFormatter()
        let now = Date()
        let items = (1...365).map { day in
            #"{"type":"heartRate","value":\#(60 + day % 30),"start":"\#(formatter.string(from: now.addingTimeInterval(-Double(day) * 86_400)))"}"#
        }
        var upload = HTTPClientRequest(url: "\(base)/api/users/data")
        upload.method = .POST
        upload.headers.add(name: "Authorization", value: "Bearer \(token)")
        upload.headers.add(name: "Content-Type", value: "application/json")
        upload.body = .bytes(ByteBuffer(string: #"{"items":["# + items.joined(separator: ",") + "]}"))
        _ = try await client.execute(upload, timeout: .seconds(60)).body.collect(upTo: 1 << 20)
        let from = formatter.string(from: now.addingTimeInterval(-366 * 86_400))
        var latencies: [Double] = []
        for _ in 0..<50 {
            var request = HTTPClientRequest(url: "\(base)/api/users/data/summary?type=heartRate&bucket=day&from=\(from)")
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            let sent = ContinuousClock.now
            let response = try await client.execute(request, timeout: .seconds(30))
            let body = try await response.body.collect(upTo: 1 << 20)
            latencies.append((ContinuousClock.now - sent).inSeconds * 1000)
            guard response.status == .ok, String(buffer: body).components(separatedBy: #""count""#).count > 365 else {
                throw ValidationError("summary answered \(response.status): \(String(buffer: body).prefix(200))")
            }
        }
        return latencies.sorted()
    }

    struct Variants {
        let recent: PhaseResult
        let enrolled: PhaseResult
        let subscribed: PhaseResult
        let grants: Int
    }

    /// The uploads over the last hours (AutomatedSOS only watches fresh readings, and a grant's
    /// events are what the parties wait for), each phase on its own stretch: as they are, with
    /// everyone enrolled in AutomatedSOS (below 40 bpm for 3 readings: these never trigger), then
    /// nobody enrolled and every individual granting five organisations a subscription.
    private func variantPhases(_ server: BenchServer, tokens: [String]) async throws -> Variants {
        let recent = try await httpPhase(
            server.client, server.base, tokens: tokens, bodies: makeBodies(secondsAgo: 3 * span + 600, prefix: "r"))

        let database = Database(configuration: server.databaseURL.clientConfiguration(maximumConnections: 8), logger: server.logger)
        let enrolled = try await database.whileRunning {
            let store = IndividualStore(database: database)
            let ids = try await BenchServer.concurrently(individuals, 8) { index -> Int64 in
                guard let id = try await store.credentials(email: BenchServer.email(index))?.id else {
                    throw ValidationError("no bench individual \(index)")
                }
                return id
            }
            try await SOSBenchCommand.enrol(ids, database)
            let enrolled = try await httpPhase(
                server.client, server.base, tokens: tokens, bodies: makeBodies(secondsAgo: 2 * span + 600, prefix: "e"))
            try await SOSBenchCommand.enrol(ids, database, enabled: false)
            return enrolled
        }

        let parties = 5
        let organisations = try await BenchServer.concurrently(parties, parties) { try await server.thirdPartySession($0) }
        _ = try await BenchServer.concurrently(individuals * parties, clients) { index in
            let (person, party) = (index / parties, index % parties)
            let (_, filed) = try await server.send(
                .POST, "/api/thirdparties/requests", token: organisations[party],
                json: #"{"fiscalCode":"\#(BenchServer.fiscalCode(person))","types":["heartRate"],"purpose":"Bench","subscribe":true}"#)
            guard let id = filed["id"] as? String else { throw ValidationError("request for \(person) failed") }
            let (status, _) = try await server.send(.PUT, "/api/users/requests/\(id)", token: tokens[person], json: #"{"decision":"accept"}"#)
            guard status == .ok else { throw ValidationError("acceptance of \(id) answered \(status)") }
        }
        let subscribed = try await httpPhase(
            server.client, server.base, tokens: tokens, bodies: makeBodies(secondsAgo: span + 600, prefix: "s"))
        return Variants(recent: recent, enrolled: enrolled, subscribed: subscribed, grants: individuals * parties)
    }

    /// The server's decoding and validation of the same uploads alone, on one thread: the median
    /// of five passes, since one pass (under a second) moved by half between runs on this machine.
    /// Decoding (and inflating, when `coding` says the bodies are coded) and validating every
    /// upload on one thread: the median of five passes.
    /// `--decoding-only`: the three formats' decoding and validating, each the median of 5 passes.
    private func reportDecodingOnly() throws {
        print("data4help bench ingest --decoding-only — \(batches) uploads × \(batchSize) heart-rate samples, one thread")
        let items = makeBodies(secondsAgo: roundSecondsAgo(0), prefix: "m0.")
        let phases = [
            ("items", try decodePhase(items)),
            ("series", try decodePhase(makeSeriesBodies(secondsAgo: roundSecondsAgo(0)))),
            ("gzip-coded items", try decodePhase(items.map(Self.gzipped), coding: .gzip)),
        ]
        for (name, phase) in phases {
            print(String(format: "%@: %.0f samples/s (%.3f µs per sample)", name, phase.throughput, 1e6 / phase.throughput))
        }
    }

    private func decodePhase(_ bodies: [ByteBuffer], coding: ContentCoding = .identity) throws -> PhaseResult {
        let rules = IngestRules()
        let now = Date()
        var passes: [Double] = []
        for _ in 0..<5 {
            let started = ContinuousClock.now
            var valid = 0
            for body in bodies {
                guard let upload = try IngestUploadBody.upload(in: coding.decode(body, limit: 1 << 24)) else { continue }
                for item in upload.items where (try? rules.validate(item, now: now)) != nil { valid += 1 }
                for series in upload.series { valid += rules.validate(series, now: now).samples.count }
            }
            guard valid == batches * batchSize else { throw ValidationError("decoding found \(valid) valid samples") }
            passes.append((ContinuousClock.now - started).inSeconds)
        }
        return PhaseResult(samples: batches * batchSize, elapsed: percentile(passes.sorted(), 0.5), latencies: [])
    }

    private func httpPhase(
        _ client: HTTPClient, _ base: String, tokens: [String], bodies: [ByteBuffer], coding: String? = nil
    ) async throws -> PhaseResult {
        let (batchSize, individuals) = (self.batchSize, self.individuals)
        return try await runConcurrently { batch in
            var request = HTTPClientRequest(url: "\(base)/api/users/data")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(tokens[batch % individuals])")
            request.headers.add(name: "Content-Type", value: "application/json")
            if let coding { request.headers.add(name: "Content-Encoding", value: coding) }
            request.body = .bytes(bodies[batch])
            let response = try await client.execute(request, timeout: .seconds(120))
            let body = try await response.body.collect(upTo: 1 << 20)
            guard response.status == .ok, String(buffer: body).contains(#""accepted":\#(batchSize)"#) else {
                throw ValidationError("upload \(batch) answered \(response.status): \(String(buffer: body).prefix(300))")
            }
        }
    }

    /// Runs every upload once, `clients` at a time, and times each.
    private func runConcurrently(_ upload: @escaping @Sendable (Int) async throws -> Void) async throws -> PhaseResult {
        let (batches, batchSize) = (self.batches, self.batchSize)
        let next = WorkCounter()
        let cpuAtStart = CPUTime.now
        let started = ContinuousClock.now
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for _ in 0..<clients {
                group.addTask {
                    var mine: [Double] = []
                    while case let batch = next.take(), batch < batches {
                        let sent = ContinuousClock.now
                        try await upload(batch)
                        mine.append((ContinuousClock.now - sent).inSeconds * 1000)
                    }
                    return mine
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        var phase = PhaseResult(samples: batches * batchSize, elapsed: (ContinuousClock.now - started).inSeconds, latencies: latencies.sorted())
        (phase.processCPU, phase.machineCPU) = CPUTime.now.since(cpuAtStart)
        return phase
    }

    /// The rows `makeBodies` uploads, as the ingest statement takes them.
    private func rawColumns(secondsAgo: Double, prefix: String) -> [SampleColumns] {
        (0..<batches).map { batch in
            var columns = SampleColumns()
            let start = batchStart(batch, secondsAgo: secondsAgo)
            for second in 0..<batchSize {
                columns.append(
                    type: SampleType.heartRate.storageCode, start: start.addingTimeInterval(Double(second)),
                    value: Float(55 + (batch * 7 + second) % 60), durationMs: nil, key: DedupeKey.forClientId("\(prefix)\(batch)-\(second)")
                )
            }
            return columns
        }
    }

    /// The same uploads written through `HealthDataStore` directly, for other individuals, with
    /// the statements an upload runs in its transaction: the lock, the ingest statement and the
    /// Anomaly Detection module's lookup (`AnomalyDetector`, as the server runs it after storing).
    private func rawPhase(_ database: Database, individuals ids: [Int64], columns: [SampleColumns]) async throws -> PhaseResult {
        let (batchSize, individuals) = (self.batchSize, self.individuals)
        let writer = HealthDataStore(database: database, partitions: PartitionMaintainer(database: database))
        let detector = AnomalyDetector(logger: database.logger)
        return try await runConcurrently { batch in
            let outcome = try await writer.ingest(
                individualId: ids[batch % individuals], samples: columns[batch], locations: LocationColumns()
            ) { readings, transaction in
                guard !readings.isEmpty else { return }
                try await detector.samplesStored(readings, in: transaction)
            }
            guard outcome.newSamples.count == batchSize else { throw ValidationError("raw upload \(batch) stored \(outcome.newSamples.count)") }
        }
    }

    /// Heap, TOAST and index bytes of every sample_blocks partition, per stored sample.
    private func bytesPerSample(_ url: DatabaseURL, logger: Logger) async throws -> (bytes: Double, samples: Int) {
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 1), logger: logger)
        return try await database.whileRunning {
            let footprint = try await HealthDataStore(database: database, partitions: PartitionMaintainer(database: database)).storageFootprint()
            return (Double(footprint.bytes) / Double(footprint.samples), Int(footprint.samples))
        }
    }

    /// `http` and `raw`: the pairs' phases pooled.
    private func report(_ pairs: [Pair], http: PhaseResult, raw: PhaseResult, decoding: PhaseResult, bytesPerSample: (bytes: Double, samples: Int)) {
        func row(_ name: String, _ phase: PhaseResult) -> String {
            let rate = String(format: "%10.0f", phase.throughput)
            let p50 = String(format: "%8.1f", percentile(phase.latencies, 0.5))
            let p99 = String(format: "%8.1f", percentile(phase.latencies, 0.99))
            return "\(name.padding(toLength: 40, withPad: " ", startingAt: 0)) \(rate)  \(p50)  \(p99)"
        }
        let ratios = pairs.map(\.ratio).sorted()
        print("")
        print("round  first     end to end  ceiling (samples/s)  end to end / ceiling   CPU µs per sample, this process + the rest:")
        print("                                                                             end to end     ceiling")
        for (round, pair) in pairs.enumerated() {
            let (http, raw) = (pair.http.cpuPerSample, pair.raw.cpuPerSample)
            print(
                String(
                    format: "%5d  %@ %10.0f %10.0f  %19.0f %%           %4.2f + %4.2f    %4.2f + %4.2f", round + 1,
                    round.isMultiple(of: 2) ? "HTTP   " : "ceiling", pair.http.throughput, pair.raw.throughput, 100 * pair.ratio, http.process,
                    http.rest, raw.process, raw.rest))
        }
        print("")
        print("phase, \(pairs.count) rounds together              samples/s  p50 (ms)  p99 (ms)   per upload of \(batchSize)")
        print(row("HTTP + JSON, end to end", http))
        print(row("database ceiling (same SQL, no HTTP)", raw))
        print(
            String(
                format: "end to end / ceiling: median of the rounds %.0f %% (lowest %.0f %%, highest %.0f %%); all rounds together %.0f %%",
                100 * percentile(ratios, 0.5), 100 * ratios[0], 100 * ratios[ratios.count - 1], 100 * http.throughput / raw.throughput))
        let (httpCPU, rawCPU) = (http.cpuPerSample, raw.cpuPerSample)
        print(
            String(
                format:
                    "CPU per sample, all rounds: end to end %.2f µs in this process (server and load generator) + %.2f µs in the rest of the machine; ceiling %.2f + %.2f µs",
                httpCPU.process, httpCPU.rest, rawCPU.process, rawCPU.rest))
        BenchSummary.record(
            "ingest", "end to end / ceiling, median of \(pairs.count) alternated rounds (lowest, highest)", format: "%.0f %% (%.0f, %.0f)",
            100 * percentile(ratios, 0.5), 100 * ratios[0], 100 * ratios[ratios.count - 1])
        BenchSummary.record(
            "ingest", "CPU µs per sample, this process + the rest: end to end / ceiling", format: "%.2f + %.2f / %.2f + %.2f", httpCPU.process,
            httpCPU.rest, rawCPU.process, rawCPU.rest)
        print(
            String(
                format: "decoding and validating uploads alone, one thread, median of 5 passes: %.0f samples/s (%.2f µs per sample)",
                decoding.throughput,
                1e6 / decoding.throughput))
        print(
            String(
                format: "storage: %.1f bytes per stored sample, indexes and TOAST included (%d samples)", bytesPerSample.bytes, bytesPerSample.samples
            ))
        BenchSummary.record("ingest", "end to end, HTTP + JSON (samples/s)", format: "%.0f", http.throughput)
        BenchSummary.record("ingest", "database ceiling, same SQL without HTTP (samples/s)", format: "%.0f", raw.throughput)
        BenchSummary.record(
            "ingest", "upload of \(batchSize) acknowledged, p50 / p99 (ms)", format: "%.1f / %.1f", percentile(http.latencies, 0.5),
            percentile(http.latencies, 0.99))
        BenchSummary.record("ingest", "bytes per stored sample", format: "%.1f", bytesPerSample.bytes)
    }
}

extension IngestBenchCommand {
    /// The series phases against the same rounds' ceilings.
    fileprivate func reportSeries(_ pairs: [Pair], raw: PhaseResult, decoding: PhaseResult) {
        reportFormat(
            pairs, \.series, raw: raw, decoding: decoding, name: "series",
            heading: "the same readings uploaded as series (one series of \(batchSize) values an upload, no ids):",
            decodingWhat: "decoding and validating the series alone")
    }

    /// The gzip-coded items' phases against the same rounds' ceilings, with their bytes.
    fileprivate func reportGzip(_ pairs: [Pair], raw: PhaseResult, decoding: PhaseResult) throws {
        let plain = makeBodies(secondsAgo: roundSecondsAgo(0), prefix: "m0.")
        let (plainBytes, codedBytes) = (plain.reduce(0) { $0 + $1.readableBytes }, try plain.map(Self.gzipped).reduce(0) { $0 + $1.readableBytes })
        let perSample = { (bytes: Int) in String(format: "%.1f", Double(bytes) / Double(batches * batchSize)) }
        reportFormat(
            pairs, \.gzip, raw: raw, decoding: decoding, name: "gzip",
            heading:
                "the same items gzip-coded (Content-Encoding: gzip; \(perSample(codedBytes)) bytes a sample on the wire "
                + "against \(perSample(plainBytes))):",
            decodingWhat: "inflating, decoding and validating the items alone", summaryName: "items gzip-coded")
    }

    /// One upload format's phases (`phase`) against the same rounds' ceilings: a line a round,
    /// the rounds together, and the format decoded alone.
    private func reportFormat(
        _ pairs: [Pair], _ phase: KeyPath<Pair, PhaseResult>, raw: PhaseResult, decoding: PhaseResult, name: String, heading: String,
        decodingWhat: String, summaryName: String? = nil
    ) {
        let pooled = PhaseResult(pooling: pairs.map { $0[keyPath: phase] })
        let ratios = pairs.map { $0[keyPath: phase].throughput / $0.raw.throughput }.sorted()
        let (column, ratioColumn) = ("\(name) (samples/s)", "\(name) / ceiling")
        func right(_ text: String, _ width: Int) -> String { String(repeating: " ", count: max(0, width - text.count)) + text }
        print("")
        print(heading)
        print("round  \(column)  ceiling  \(ratioColumn)  (items / ceiling)   CPU µs per sample, this process + the rest")
        for (round, pair) in pairs.enumerated() {
            let result = pair[keyPath: phase]
            let cpu = result.cpuPerSample
            print(
                String(format: "%5d  ", round + 1) + right(String(format: "%.0f", result.throughput), column.count)
                    + String(format: " %8.0f  ", pair.raw.throughput)
                    + right(String(format: "%.0f", 100 * result.throughput / pair.raw.throughput), ratioColumn.count - 2)
                    + String(format: " %%  (%14.0f %%)   %4.2f + %4.2f", 100 * pair.ratio, cpu.process, cpu.rest))
        }
        let cpu = pooled.cpuPerSample
        print(
            String(
                format:
                    "%@ / ceiling: median of the rounds %.0f %% (lowest %.0f %%, highest %.0f %%); all rounds together %.0f %%; upload of %d "
                    + "acknowledged p50 / p99 %.1f / %.1f ms; CPU per sample %.2f + %.2f µs",
                name, 100 * percentile(ratios, 0.5), 100 * ratios[0], 100 * ratios[ratios.count - 1], 100 * pooled.throughput / raw.throughput,
                batchSize, percentile(pooled.latencies, 0.5), percentile(pooled.latencies, 0.99), cpu.process, cpu.rest))
        print(
            String(
                format: "%@, one thread, median of 5 passes: %.0f samples/s (%.2f µs per sample)", decodingWhat, decoding.throughput,
                1e6 / decoding.throughput))
        let summaryName = summaryName ?? name
        BenchSummary.record(
            "ingest", "\(summaryName): end to end / ceiling, median of \(pairs.count) alternated rounds (lowest, highest)",
            format: "%.0f %% (%.0f, %.0f)", 100 * percentile(ratios, 0.5), 100 * ratios[0], 100 * ratios[ratios.count - 1])
        BenchSummary.record("ingest", "\(summaryName): end to end, HTTP + JSON (samples/s)", format: "%.0f", pooled.throughput)
    }

    fileprivate func reportVariants(_ variants: Variants, ceiling: PhaseResult) {
        print("")
        print("the last hours' uploads, end to end       samples/s  p50 (ms)  p99 (ms)   of the plain / of the ceiling")
        for (name, phase) in [
            ("plain", variants.recent), ("everyone enrolled in AutomatedSOS", variants.enrolled),
            ("\(variants.grants) subscribed grants", variants.subscribed),
        ] {
            print(
                String(
                    format: "%@ %10.0f  %8.1f  %8.1f   %.0f %% / %.0f %%", name.padding(toLength: 40, withPad: " ", startingAt: 0), phase.throughput,
                    percentile(phase.latencies, 0.5), percentile(phase.latencies, 0.99), 100 * phase.throughput / variants.recent.throughput,
                    100 * phase.throughput / ceiling.throughput))
            BenchSummary.record(
                "ingest", "the last hours' uploads, \(name) (samples/s)", format: "%.0f (%.0f %% of the ceiling)", phase.throughput,
                100 * phase.throughput / ceiling.throughput)
        }
    }
}

/// Hands out work item numbers to concurrent clients.
final class WorkCounter: Sendable {
    private let next = Mutex(0)

    func take() -> Int {
        next.withLock { value in
            defer { value += 1 }
            return value
        }
    }
}
