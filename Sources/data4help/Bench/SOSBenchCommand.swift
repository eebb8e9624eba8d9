import AccessManager
import ArgumentParser
import Data4HelpCore
import DatabaseLink
import Foundation
import HTTPAPI
import Logging
import NIOHTTP1
import Synchronization

/// `data4help bench sos`: from "triggering batch acknowledged" to "dispatch received by the
/// simulator", with many enrolled individuals streaming heart rate at 1 Hz through the ingest API.
///
/// `individuals` seeded people stream one reading per second each, uploaded every
/// `uploadEvery` seconds (1: every reading is an upload of its own). First a baseline: the
/// same stream while nobody is enrolled. Then everyone is enrolled (3 readings, cancel window
/// 0) and `emergencies` of them, at random seconds, send three low readings in a row. The
/// dispatch centre is the in-process `DispatchCentreSimulator`.
struct SOSBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sos", abstract: "AutomatedSOS detection-to-dispatch latency under 1 Hz streaming.")

    @Option(help: "Individuals, each streaming one heart-rate reading per second.") var individuals = 10_000
    @Option(help: "Seconds of streaming, per phase.") var seconds = 60
    @Option(help: "Seconds between a phone's uploads (each carries that many readings); 1 for an upload per reading.") var uploadEvery = 30
    @Option(help: "Individuals who go below the threshold (three low readings) at a random second.") var emergencies = 200
    @Option(help: "Concurrent HTTP connections of the load generator.") var clients = 64

    func run() async throws {
        let secret = "bench-dispatch-secret-0123456789"
        let centreReservation = try LoopbackPortReservation.forImmediateBind()
        let centrePort = centreReservation.port
        let tally = Tally()
        let centre = DispatchCentreSimulator(
            secret: secret,
            onDispatch: { dispatch in
                let name = ((dispatch.json["person"] as? [String: Any])?["name"] as? String) ?? ""
                tally.received.withLock { $0[name] = dispatch.receivedAt }
            })
        var centreLogger = Logger(label: "ems-sim")
        centreLogger.logLevel = .warning
        let centreTask = Task { try await centre.run(host: "127.0.0.1", port: centrePort, logger: centreLogger) }
        defer { centreTask.cancel(); withExtendedLifetime(centreReservation) {} }
        try await BenchServer.run(configure: {
            $0.sosDispatchURL = "http://127.0.0.1:\(centrePort)/dispatches"
            $0.sosDispatchSecret = secret
            $0.databasePoolSize = 16
        }) { server in
            print(
                """
                data4help bench sos — \(individuals) individuals at 1 Hz, an upload every \(uploadEvery) s, \(seconds) s per phase, \
                \(emergencies) emergencies, \(clients) connections
                """)
            let setUp = ContinuousClock.now
            let database = Database(configuration: server.databaseURL.clientConfiguration(maximumConnections: 8), logger: server.logger)
            let (ids, tokens) = try await database.whileRunning { try await Self.seed(individuals, tag: "sosbench", database) }
            print(String(format: "set-up (seeding, tokens): %.0f s", (ContinuousClock.now - setUp).inSeconds))

            let (baseline, _) = try await stream(server, tokens: tokens, lowFrom: [:])
            print(baseline.line("baseline, nobody enrolled"))

            let enrolling = Database(configuration: server.databaseURL.clientConfiguration(maximumConnections: 8), logger: server.logger)
            try await enrolling.whileRunning { try await Self.enrol(ids, enrolling) }
            var generator = SystemRandomNumberGenerator()
            let chosen = Array((0..<individuals).shuffled(using: &generator).prefix(emergencies))
            let lowFrom = Dictionary(uniqueKeysWithValues: chosen.map { ($0, Int.random(in: 2..<max(3, seconds - 3), using: &generator)) })
            let (watched, triggers) = try await stream(server, tokens: tokens, lowFrom: lowFrom)
            print(watched.line("everyone enrolled, \(emergencies) emergencies"))
            try await Task.sleep(for: .seconds(2))  // the last dispatches

            let arrivals = tally.received.withLock { $0 }
            var afterAck: [Double] = [], afterSend: [Double] = []
            for (person, timing) in triggers.timing.withLock({ $0 }) {
                guard let arrived = arrivals["Seeded \(person)"] else { continue }
                afterAck.append((arrived - timing.acknowledged).inSeconds * 1000)
                afterSend.append((arrived - timing.sent).inSeconds * 1000)
            }
            afterAck.sort()
            afterSend.sort()
            func line(_ name: String, _ values: [Double]) -> String {
                String(
                    format: "%@ p50 %7.1f ms   p99 %7.1f ms   max %7.1f ms",
                    name.padding(toLength: 52, withPad: " ", startingAt: 0), percentile(values, 0.5), percentile(values, 0.99), values.last ?? .nan)
            }
            print("emergencies: \(emergencies), dispatched: \(arrivals.count), repeat calls: \(centre.dispatches.filter { $0.calls > 1 }.count)")
            print(line("triggering batch acknowledged → dispatch received", afterAck))
            print(line("triggering batch sent → dispatch received", afterSend))
            BenchSummary.record(
                "sos", "upload acknowledged p99, nobody / everyone enrolled (ms)", format: "%.1f / %.1f", percentile(baseline.acks, 0.99),
                percentile(watched.acks, 0.99))
            BenchSummary.record(
                "sos", "emergencies dispatched (repeat calls)",
                "\(arrivals.count) of \(emergencies) (\(centre.dispatches.filter { $0.calls > 1 }.count))")
            BenchSummary.record(
                "sos", "batch acknowledged → dispatch received, p50 / p99 / max (ms)", format: "%.1f / %.1f / %.1f", percentile(afterAck, 0.5),
                percentile(afterAck, 0.99), afterAck.last ?? .nan)
        }
    }

    /// One phase: every individual's readings of `seconds` seconds, uploaded every `uploadEvery`
    /// seconds; `lowFrom` people send three low readings from that second on.
    private func stream(_ server: BenchServer, tokens: [String], lowFrom: [Int: Int]) async throws -> (PhoneStream.Result, Triggers) {
        let phones = PhoneStream(individuals: individuals, every: uploadEvery, seconds: seconds, clients: clients)
        let (individuals, every) = (self.individuals, phones.every)
        let wallStart = Date().addingTimeInterval(1)
        let triggers = Triggers()
        let result = try await phones.run(
            server, tokens: tokens, start: .now + .seconds(1),
            items: { person, round in
                (0..<every).map { offset in
                    let second = round * every + offset
                    let low = lowFrom[person].map { (0..<3).contains(second - $0) } ?? false
                    return PhoneStream.item(
                        "heartRate", low ? 30 : 72, at: wallStart.addingTimeInterval(Double(second) + Double(person) / Double(individuals)))
                }
            },
            acknowledged: { upload in
                if let from = lowFrom[upload.person], (upload.round * every..<(upload.round + 1) * every).contains(from + 2) {
                    triggers.timing.withLock { $0[upload.person] = (upload.sent, upload.acknowledged) }
                }
            })
        return (result, triggers)
    }

    /// When each emergency's triggering upload was sent and acknowledged.
    final class Triggers: Sendable {
        let timing = Mutex<[Int: (sent: ContinuousClock.Instant, acknowledged: ContinuousClock.Instant)]>([:])
    }

    /// What the simulator notes down, from its request handlers.
    final class Tally: Sendable {
        let received = Mutex<[String: ContinuousClock.Instant]>([:])
    }

    /// Seeds the individuals and logs each in; answers their ids and tokens, in seeding order.
    static func seed(_ individuals: Int, tag: String, _ database: Database) async throws -> ([Int64], [String]) {
        let seeder = PopulationSeeder(database: database)
        try await seeder.seed(individuals: individuals, days: 1, tag: tag)
        let ids = try await seeder.seededIds(tag: tag)
        let sessions = SessionService(database: database, hasher: PasswordHasher(), tokenLifetime: .seconds(86_400))
        let tokens = try await BenchServer.concurrently(ids.count, 8) { try await sessions.issue(for: .individual(ids[$0])).token }
        return (ids, tokens)
    }

    /// Enrols everyone: below 40 bpm for 3 readings, no cancel window (or, not `enabled`, the
    /// same settings turned off).
    static func enrol(_ ids: [Int64], _ database: Database, enabled: Bool = true) async throws {
        let settings = SOSSettingsStore(database: database)
        _ = try await BenchServer.concurrently(ids.count, 8) { index in
            _ = try await settings.replace(
                individualId: ids[index],
                with: SOSSettingsRecord(
                    enabled: enabled, minHeartRate: 40, maxHeartRate: nil, minOxygenSaturation: nil, consecutiveReadings: 3,
                    cancelWindowSeconds: 0, contacts: "[]", medicalNotes: ""
                ), contactURLs: [:], newSecrets: [:])
        }
    }
}
