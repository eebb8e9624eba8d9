import AccessManager
import ArgumentParser
import DatabaseLink
import Foundation
import HTTPAPI
import Logging
import NIOHTTP1
import Synchronization

/// `data4help bench sos`: from "triggering batch acknowledged" to "dispatch received by the
/// simulator", with many enrolled individuals streaming heart rate at 1 Hz through the ingest API.
///
/// `individuals` seeded people, all enrolled (3 readings, cancel window 0), each upload one
/// reading per second of their own; `emergencies` of them, at random seconds, send three low
/// readings in a row. The dispatch centre is the in-process `DispatchCentreSimulator`.
struct SOSBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sos", abstract: "AutomatedSOS detection-to-dispatch latency under 1 Hz streaming.")

    @Option(help: "Enrolled individuals, each streaming one heart-rate reading per second.") var individuals = 10_000
    @Option(help: "Seconds of streaming.") var seconds = 30
    @Option(help: "Individuals who go below the threshold (three low readings) at a random second.") var emergencies = 200
    @Option(help: "Concurrent HTTP connections of the load generator.") var clients = 64

    func run() async throws {
        let secret = "bench-dispatch-secret-0123456789"
        let centrePort = try freeLoopbackPort()
        let tally = Tally()
        let centre = DispatchCentreSimulator(secret: secret, onDispatch: { dispatch in
            let name = ((dispatch.json["person"] as? [String: Any])?["name"] as? String) ?? ""
            tally.received.withLock { $0[name] = dispatch.receivedAt }
        })
        var centreLogger = Logger(label: "ems-sim")
        centreLogger.logLevel = .warning
        let centreTask = Task { try await centre.run(host: "127.0.0.1", port: centrePort, logger: centreLogger) }
        defer { centreTask.cancel() }
        try await BenchServer.run(configure: {
            $0.sosDispatchURL = "http://127.0.0.1:\(centrePort)/dispatches"
            $0.sosDispatchSecret = secret
            $0.databasePoolSize = 16
        }) { server in
            print("data4help bench sos — \(individuals) enrolled individuals at 1 Hz for \(seconds) s, \(emergencies) emergencies, \(clients) connections")
            let setUp = ContinuousClock.now
            let tokens = try await enrol(server)
            print(String(format: "set-up (seeding, enrolment, tokens): %.0f s", (ContinuousClock.now - setUp).inSeconds))

            // Who goes low, and when (never in the first or last two seconds).
            var generator = SystemRandomNumberGenerator()
            let chosen = Array((0..<individuals).shuffled(using: &generator).prefix(emergencies))
            let lowFrom = Dictionary(uniqueKeysWithValues: chosen.map { ($0, Int.random(in: 2..<max(3, seconds - 3), using: &generator)) })
            let start = ContinuousClock.now + .seconds(1)
            let wallStart = Date().addingTimeInterval(1)
            let individuals = self.individuals, total = individuals * seconds
            let next = WorkCounter()
            // Reading k is individual k % n's reading of second k / n, due at start + k / n seconds.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<self.clients {
                    group.addTask {
                        while case let k = next.take(), k < total {
                            let (second, person) = (k / individuals, k % individuals)
                            let due = start + .seconds(Double(k) / Double(individuals))
                            if ContinuousClock.now < due { try await Task.sleep(until: due) } else if ContinuousClock.now - due > .seconds(1) {
                                tally.late.withLock { $0 += 1 }
                            }
                            let low = lowFrom[person].map { (0..<3).contains(second - $0) } ?? false
                            let time = wallStart.addingTimeInterval(Double(k) / Double(individuals))
                            let body = #"{"items":[{"type":"heartRate","value":\#(low ? 30 : 72),"start":"\#(time.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true)))Z"}]}"#
                            let sent = ContinuousClock.now
                            let status = try? await server.send(.POST, "/api/users/data", token: tokens[person], json: body).status
                            let acknowledged = ContinuousClock.now
                            if status != .ok { tally.failed.withLock { $0 += 1 } }
                            if let from = lowFrom[person], second == from + 2 { tally.triggered.withLock { $0[person] = (sent, acknowledged) } }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let streamed = ContinuousClock.now - start
            try await Task.sleep(for: .seconds(2))   // the last dispatches
            let arrivals = tally.received.withLock { $0 }
            var afterAck: [Double] = [], afterSend: [Double] = []
            let triggers = tally.triggered.withLock { $0 }
            for (person, timing) in triggers {
                guard let arrived = arrivals["Seeded \(person)"] else { continue }
                afterAck.append((arrived - timing.acknowledged).inSeconds * 1000)
                afterSend.append((arrived - timing.sent).inSeconds * 1000)
            }
            afterAck.sort()
            afterSend.sort()
            func line(_ name: String, _ values: [Double]) -> String {
                String(format: "%@ p50 %7.1f ms   p99 %7.1f ms   max %7.1f ms",
                       name.padding(toLength: 52, withPad: " ", startingAt: 0), percentile(values, 0.5), percentile(values, 0.99), values.last ?? .nan)
            }
            print(String(format: "streamed %d readings in %.1f s: %.0f uploads/s (target %d/s); %d more than 1 s behind schedule; %d failed",
                         total, streamed.inSeconds, Double(total) / streamed.inSeconds, individuals, tally.late.withLock { $0 }, tally.failed.withLock { $0 }))
            print("emergencies: \(emergencies), dispatched: \(arrivals.count), repeat calls: \(centre.dispatches.filter { $0.calls > 1 }.count)")
            print(line("triggering batch acknowledged → dispatch received", afterAck))
            print(line("triggering batch sent → dispatch received", afterSend))
        }
    }

    /// What the load generator and the simulator note down, from many tasks.
    final class Tally: Sendable {
        let received = Mutex<[String: ContinuousClock.Instant]>([:])
        let triggered = Mutex<[Int: (sent: ContinuousClock.Instant, acknowledged: ContinuousClock.Instant)]>([:])
        let late = Mutex(0)
        let failed = Mutex(0)
    }

    /// Seeds, enrols (3 readings, no cancel window) and logs in every individual; answers their tokens.
    private func enrol(_ server: BenchServer) async throws -> [String] {
        let database = Database(configuration: server.databaseURL.clientConfiguration(maximumConnections: 8), logger: server.logger)
        return try await database.whileRunning {
            let seeder = PopulationSeeder(database: database)
            try await seeder.seed(individuals: individuals, days: 1, tag: "sosbench")
            let ids = try await seeder.seededIds(tag: "sosbench")
            let settings = SOSSettingsStore(database: database)
            let sessions = SessionService(database: database, hasher: PasswordHasher(), tokenLifetime: .seconds(86_400))
            return try await BenchServer.concurrently(ids.count, 8) { index in
                _ = try await settings.replace(individualId: ids[index], with: SOSSettingsRecord(
                    enabled: true, minHeartRate: 40, maxHeartRate: nil, minOxygenSaturation: nil, consecutiveReadings: 3,
                    cancelWindowSeconds: 0, contacts: "[]", medicalNotes: ""
                ), contactURLs: [:], newSecrets: [:])
                return try await sessions.issue(for: .individual(ids[index])).token
            }
        }
    }
}
