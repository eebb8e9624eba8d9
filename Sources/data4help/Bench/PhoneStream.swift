import Data4HelpCore
import Foundation
import NIOHTTP1
import Synchronization

/// Individuals' phones uploading their readings on a fixed schedule through `POST /api/users/data`:
/// `rounds` uploads each, one every `every` seconds, spread evenly over each interval. Upload j is
/// individual j % n's round j / n, due at start + (j / n) × every seconds; `clients` connections
/// carry them. The AutomatedSOS and watch-rule benchmarks both load the server this way.
struct PhoneStream: Sendable {
    let individuals: Int
    /// Seconds between one phone's uploads.
    let every: Int
    let rounds: Int
    let clients: Int

    init(individuals: Int, every: Int, seconds: Int, clients: Int) {
        self.individuals = individuals
        self.every = max(1, every)
        self.rounds = max(1, seconds / max(1, every))
        self.clients = clients
    }

    /// When one upload was sent and acknowledged.
    struct Upload: Sendable {
        let person: Int
        let round: Int
        let sent: ContinuousClock.Instant
        let acknowledged: ContinuousClock.Instant
    }

    struct Result: Sendable {
        let uploads: Int
        let readings: Int
        let elapsed: Duration
        /// Uploads per second the schedule asks for.
        let target: Double
        /// Milliseconds from sent to acknowledged, sorted.
        let acks: [Double]
        /// Uploads sent more than a second after they were due (the server fell behind).
        let late: Int
        let failed: Int

        func line(_ phase: String) -> String {
            String(
                format:
                    "%@: %.0f uploads/s (target %.0f/s), %.0f readings/s; upload acknowledged p50 %.1f ms p99 %.1f ms; %d uploads more than 1 s behind schedule; %d failed",
                phase, Double(uploads) / elapsed.inSeconds, target, Double(readings) / elapsed.inSeconds,
                percentile(acks, 0.5), percentile(acks, 0.99), late, failed)
        }
    }

    /// Runs the schedule from `start`. `items` gives the JSON items of a person's round (second
    /// `round × every + i` of the phase is item i's natural time); `acknowledged` hears each
    /// upload the server answered 200.
    func run(
        _ server: BenchServer, tokens: [String], start: ContinuousClock.Instant, items: @escaping @Sendable (_ person: Int, _ round: Int) -> [String],
        acknowledged: @escaping @Sendable (Upload) -> Void = { _ in }
    ) async throws -> Result {
        let (individuals, every, total) = (self.individuals, self.every, self.individuals * rounds)
        let next = WorkCounter()
        let tally = Tally()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<clients {
                group.addTask {
                    while case let j = next.take(), j < total {
                        let (round, person) = (j / individuals, j % individuals)
                        let due = start + .seconds(Double(j) / Double(individuals) * Double(every))
                        if ContinuousClock.now < due {
                            try await Task.sleep(until: due)
                        } else if ContinuousClock.now - due > .seconds(1) {
                            tally.late.withLock { $0 += 1 }
                        }
                        let body = items(person, round)
                        let sent = ContinuousClock.now
                        let status = try? await server.send(
                            .POST, "/api/users/data", token: tokens[person], json: #"{"items":["# + body.joined(separator: ",") + "]}"
                        ).status
                        let answered = ContinuousClock.now
                        tally.acks.withLock { $0.append((answered - sent).inSeconds * 1000) }
                        tally.readings.withLock { $0 += body.count }
                        if status == .ok {
                            acknowledged(Upload(person: person, round: round, sent: sent, acknowledged: answered))
                        } else {
                            tally.failed.withLock { $0 += 1 }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        return Result(
            uploads: total, readings: tally.readings.withLock { $0 }, elapsed: ContinuousClock.now - start,
            target: Double(individuals) / Double(every), acks: tally.acks.withLock { $0 }.sorted(), late: tally.late.withLock { $0 },
            failed: tally.failed.withLock { $0 })
    }

    /// What the load generator notes down, from many tasks.
    private final class Tally: Sendable {
        let acks = Mutex<[Double]>([])
        let readings = Mutex(0)
        let late = Mutex(0)
        let failed = Mutex(0)
    }

    /// One reading as an item of the upload body.
    static func item(_ type: String, _ value: Double, at time: Date) -> String {
        #"{"type":"\#(type)","value":\#(value),"start":"\#(time.wireTime)"}"#
    }
}
