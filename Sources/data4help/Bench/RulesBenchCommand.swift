import ArgumentParser
import Data4HelpCore
import DatabaseLink
import Foundation
import HTTPAPI
import HTTPTypes
import HealthSharing
import Hummingbird
import Logging
import NIOHTTP1
import SOSManager
import Synchronization

/// `data4help bench rules`: what watch rules cost an upload, and how soon an alert reaches the
/// individual's device.
///
/// `individuals` seeded people, each with a device endpoint (an in-process receiver that checks
/// every signature) and the last half hour of heart rate at 1 Hz stored, stream heart rate at 1 Hz with one oxygen saturation and one blood glucose
/// reading per upload (a watch and a CGM), an upload every `uploadEvery` seconds. First a
/// baseline with no rule at all; then everyone adopts the four templates (low heart rate 20 min,
/// glucose out of range, glucose severe, low oxygen 5 min) and is enrolled in AutomatedSOS — the
/// five rules — and the same stream runs again, with `episodes` people of each kind creating an
/// episode at a random second. The generator knows every episode it made, so it counts the
/// alerts and ambulance calls that are missing, doubled or unexpected. The sustained kinds need
/// 5 and 20 minutes of low readings: those are stored directly beforehand (no detection runs on
/// them), ending where the stream takes over, and their people upload respiratory rate and body
/// temperature in the baseline instead (as many readings), so that nothing normal lands inside
/// their episodes.
struct RulesBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rules", abstract: "Watch rules: upload cost with five rules each, and reading → alert delivered to the device.")

    @Option(help: "Individuals, each streaming one heart-rate reading per second.") var individuals = 10_000
    @Option(help: "Seconds of streaming, per phase.") var seconds = 60
    @Option(help: "Seconds between a phone's uploads (each carries that many heart-rate readings).") var uploadEvery = 30
    @Option(help: "Episodes of each of the five kinds in the second phase.") var episodes = 40
    @Option(help: "Concurrent HTTP connections of the load generator.") var clients = 64

    /// The episodes the generator makes, and what each must cause.
    enum Kind: CaseIterable {
        case glucoseLow, glucoseSevere, oxygenLow, heartRateLow, emergency

        /// The rules (by name) that must raise one alert each.
        var alerts: [String] {
            switch self {
            case .glucoseLow: ["Glucose out of range"]
            case .glucoseSevere: ["Glucose out of range", "Glucose severely out of range"]
            case .oxygenLow: ["Low oxygen saturation"]
            case .heartRateLow: ["Low heart rate"]
            case .emergency: []
            }
        }

        /// Whether it must call an ambulance (heart rate below 40 for three readings).
        var dispatches: Bool { self == .heartRateLow || self == .emergency }

        /// Whether its low readings must start before the phase (stored beforehand).
        var sustained: Bool { self == .oxygenLow || self == .heartRateLow }
    }

    /// One person's episode: its kind and the second of the phase its condition is met at.
    struct Episode: Sendable {
        let kind: Kind
        let second: Int

        /// The round whose upload carries the reading that completes the alert's condition.
        func alertRound(every: Int) -> Int {
            kind == .oxygenLow ? (second + every - 1) / every : second / every  // oxygen: once per upload, at the round's start
        }

        /// The round whose upload carries the third low heart-rate reading.
        func dispatchRound(every: Int) -> Int {
            kind == .emergency ? (second + 2) / every : 0
        }
    }

    func run() async throws {
        lineBufferStandardOutput()
        let secret = "bench-dispatch-secret-0123456789"
        let centreReservation = try LoopbackPortReservation.forImmediateBind()
        let dispatched = Shared<[String: ContinuousClock.Instant]>([:])
        let centre = DispatchCentreSimulator(
            secret: secret,
            onDispatch: { dispatch in
                let name = ((dispatch.json["person"] as? [String: Any])?["name"] as? String) ?? ""
                dispatched.withLock { $0[name] = dispatch.receivedAt }
            })
        var quiet = Logger(label: "ems-sim")
        quiet.logLevel = .warning
        let centreTask = Task { [quiet] in try await centre.run(host: "127.0.0.1", port: centreReservation.port, logger: quiet) }
        let devices = DeviceReceiver()
        let deviceReservation = try LoopbackPortReservation.forImmediateBind()
        let devicesTask = devices.start(port: deviceReservation.port)
        defer {
            centreTask.cancel()
            devicesTask.cancel()
            withExtendedLifetime((centreReservation, deviceReservation)) {}
        }
        try await BenchServer.run(configure: {
            $0.sosDispatchURL = "http://127.0.0.1:\(centreReservation.port)/dispatches"
            $0.sosDispatchSecret = secret
            $0.webhookAllowPrivateNetworks = true
            $0.databasePoolSize = 16
        }) { server in
            print(
                """
                data4help bench rules — \(individuals) individuals at 1 Hz, an upload every \(uploadEvery) s, \(seconds) s per phase, \
                \(episodes) episodes of each of \(Kind.allCases.count) kinds, \(clients) connections
                """)
            let phones = PhoneStream(individuals: individuals, every: uploadEvery, seconds: seconds, clients: clients)
            let setUp = ContinuousClock.now
            let database = Database(configuration: server.databaseURL.clientConfiguration(maximumConnections: 8), logger: server.logger)
            try await database.whileRunning {
                let (ids, tokens) = try await SOSBenchCommand.seed(individuals, tag: "rulesbench", database)
                _ = try await BenchServer.concurrently(individuals, clients) { person in
                    let (status, body) = try await server.send(
                        .PUT, "/api/users/notifications", token: tokens[person],
                        json: #"{"url":"http://127.0.0.1:\#(deviceReservation.port)/i/\#(person)"}"#)
                    guard status == .created, let secret = body["secret"] as? String else {
                        throw ValidationError("device endpoint of \(person) answered \(status)")
                    }
                    devices.secrets.withLock { $0[person] = secret }
                }
                print(String(format: "set-up (seeding, tokens, device endpoints): %.0f s", (ContinuousClock.now - setUp).inSeconds))

                var generator = SystemRandomNumberGenerator()
                let cohort = (0..<individuals).shuffled(using: &generator).prefix(episodes * Kind.allCases.count)
                var plans: [Int: Episode] = [:]
                for (index, person) in cohort.enumerated() {
                    let kind = Kind.allCases[index % Kind.allCases.count]
                    // Oxygen is read once per upload: its completing reading must fall in the phase.
                    let last = kind == .oxygenLow ? (phones.rounds - 1) * phones.every : max(3, seconds - 3)
                    plans[person] = Episode(kind: kind, second: Int.random(in: 1...max(1, last), using: &generator))
                }
                let planned = plans

                // What a watch streaming all day leaves: the half hour before, which rules read around each upload.
                let seeding = ContinuousClock.now
                let historyFrom = Date().addingTimeInterval(-31 * 60), historyTo = Date().addingTimeInterval(-60)
                try await PartitionMaintainer(database: database).ensure(.sampleBlocks, covering: [historyFrom, historyTo])
                try await PopulationSeeder(database: database).seedHeartRate(
                    individualIds: ids.indices.filter { planned[$0]?.kind != .heartRateLow }.map { ids[$0] }, from: historyFrom, to: historyTo)
                print(String(format: "set-up (30 minutes of 1 Hz heart rate each): %.0f s", (ContinuousClock.now - seeding).inSeconds))

                let baseline = try await phones.run(
                    server, tokens: tokens, start: .now + .seconds(1),
                    items: Self.items(wallStart: Date().addingTimeInterval(1), every: phones.every, individuals: individuals) { person, _, type in
                        // Not inside a sustained episode's time: another type, as many readings.
                        guard planned[person]?.kind.sustained == true else { return nil }
                        switch type {
                        case .heartRate: return (.respiratoryRate, 16)
                        case .oxygenSaturation: return (.bodyTemperature, 36.6)
                        default: return nil
                        }
                    })
                print(baseline.line("baseline, no rules"))

                // The four alerting templates over HTTP; AutomatedSOS directly, with no cancel window, as bench sos does.
                let adopting = ContinuousClock.now
                let templates = WatchRuleTemplate.all.filter { $0.id != WatchRuleTemplate.automatedSOS.id }
                _ = try await BenchServer.concurrently(individuals * templates.count, clients) { index in
                    let (person, template) = index.quotientAndRemainder(dividingBy: templates.count)
                    let (status, _) = try await server.send(.POST, "/api/users/rule-templates/\(templates[template].id)/adopt", token: tokens[person])
                    guard status == .created else { throw ValidationError("adoption by \(person) answered \(status)") }
                }
                try await SOSBenchCommand.enrol(ids, database)
                print(
                    String(
                        format: "set-up (%d templates adopted over HTTP, AutomatedSOS enrolment): %.0f s", individuals * templates.count,
                        (ContinuousClock.now - adopting).inSeconds))

                // The phase starts once the sustained episodes' history is stored (seconds), on the clock it was stored for.
                let start = ContinuousClock.now + .seconds(15)
                let wallStart = Date().addingTimeInterval(15)
                try await Self.storeLowHistory(planned, ids: ids, wallStart: wallStart, individuals: individuals, database: database)
                let completing = Shared<[Int: [Int: ContinuousClock.Instant]]>([:])  // person → round → acknowledged
                let watched = try await phones.run(
                    server, tokens: tokens, start: start,
                    items: Self.items(wallStart: wallStart, every: phones.every, individuals: individuals) { person, second, type in
                        guard let episode = planned[person] else { return nil }
                        switch (episode.kind, type) {
                        case (.emergency, .heartRate): return (0..<3).contains(second - episode.second) ? (.heartRate, 30) : nil
                        case (.heartRateLow, .heartRate): return (.heartRate, 30)
                        case (.oxygenLow, .oxygenSaturation): return (.oxygenSaturation, 85)
                        case (.glucoseLow, .bloodGlucose), (.glucoseSevere, .bloodGlucose):
                            let value: Double = episode.kind == .glucoseLow ? 60 : 45
                            return second / phones.every == episode.second / phones.every ? (.bloodGlucose, value) : nil
                        default: return nil
                        }
                    },
                    acknowledged: { upload in
                        guard planned[upload.person] != nil else { return }
                        completing.withLock { $0[upload.person, default: [:]][upload.round] = upload.acknowledged }
                    })
                print(watched.line("five rules each, \(planned.count) episodes"))

                let expectedAlerts = planned.values.map(\.kind.alerts.count).reduce(0, +)
                let expectedDispatches = planned.values.filter(\.kind.dispatches).count
                let deadline = ContinuousClock.now + .seconds(30)
                while ContinuousClock.now < deadline,
                    devices.alertCount < expectedAlerts || dispatched.withLock({ $0.count }) < expectedDispatches
                {
                    try await Task.sleep(for: .milliseconds(50))
                }
                try await Task.sleep(for: .seconds(2))  // anything doubled or unexpected that is still on its way

                let alerts = devices.alerts.withLock { $0 }
                let acknowledged = completing.withLock { $0 }
                let calls = dispatched.withLock { $0 }
                var alertLatency: [Double] = [], dispatchLatency: [Double] = []
                var missed = 0, doubled = 0, unexpected = 0, missedCalls = 0, unexpectedCalls = 0
                for (person, episode) in planned {
                    for rule in episode.kind.alerts {
                        let arrivals = alerts[DeviceReceiver.Key(person: person, rule: rule)] ?? []
                        doubled += max(0, arrivals.count - 1)
                        guard let arrived = arrivals.first, let acked = acknowledged[person]?[episode.alertRound(every: phones.every)] else {
                            missed += 1
                            continue
                        }
                        alertLatency.append((arrived - acked).inSeconds * 1000)
                    }
                    if episode.kind.dispatches {
                        if let arrived = calls["Seeded \(person)"], let acked = acknowledged[person]?[episode.dispatchRound(every: phones.every)] {
                            dispatchLatency.append((arrived - acked).inSeconds * 1000)
                        } else {
                            missedCalls += 1
                        }
                    }
                }
                for key in alerts.keys where !(planned[key.person]?.kind.alerts.contains(key.rule) ?? false) { unexpected += 1 }
                for name in calls.keys {
                    let person = Int(name.dropFirst("Seeded ".count)) ?? -1
                    if planned[person]?.kind.dispatches != true { unexpectedCalls += 1 }
                }
                alertLatency.sort()
                dispatchLatency.sort()
                let ratio = percentile(watched.acks, 0.99) / percentile(baseline.acks, 0.99)
                func line(_ name: String, _ values: [Double]) -> String {
                    String(
                        format: "%@ p50 %7.1f ms   p99 %7.1f ms   max %7.1f ms", name.padding(toLength: 62, withPad: " ", startingAt: 0),
                        percentile(values, 0.5), percentile(values, 0.99), values.last ?? .nan)
                }
                print(String(format: "upload acknowledged p99 with five rules each / without: %.2f×", ratio))
                let received = alerts.values.map(\.count).reduce(0, +)
                print(
                    """
                    alerts: \(expectedAlerts) expected, \(received) received; \(missed) missed, \(doubled) doubled, \
                    \(unexpected) unexpected; bad signatures \(devices.badSignatures.withLock { $0 }), redelivered \(devices.redelivered.withLock { $0 })
                    """)
                print(
                    "ambulance calls: \(expectedDispatches) expected, \(calls.count) received; \(missedCalls) missed, \(unexpectedCalls) unexpected, repeat calls \(centre.dispatches.filter { $0.calls > 1 }.count)"
                )
                print(line("upload completing a condition acknowledged → alert received", alertLatency))
                print(line("upload completing an emergency acknowledged → call received", dispatchLatency))
                BenchSummary.record(
                    "rules", "upload acknowledged p99, no rules / five rules each (ms)", format: "%.1f / %.1f (%.2f×)",
                    percentile(baseline.acks, 0.99), percentile(watched.acks, 0.99), ratio)
                BenchSummary.record(
                    "rules", "alerts received of expected (missed, doubled, unexpected)",
                    "\(alertLatency.count) of \(expectedAlerts) (\(missed), \(doubled), \(unexpected))")
                BenchSummary.record(
                    "rules", "upload acknowledged → alert received, p50 / p99 / max (ms)", format: "%.1f / %.1f / %.1f",
                    percentile(alertLatency, 0.5), percentile(alertLatency, 0.99), alertLatency.last ?? .nan)
            }
        }
    }

    /// The items of a person's round: heart rate every second, then one oxygen saturation and one
    /// glucose reading at the round's first second, at `second + person / individuals` seconds
    /// after `wallStart`; `override` changes a reading's type and value (nil: the normal one).
    static func items(
        wallStart: Date, every: Int, individuals: Int,
        override: @escaping @Sendable (_ person: Int, _ second: Int, _ type: SampleType) -> (SampleType, Double)?
    ) -> @Sendable (Int, Int) -> [String] {
        { person, round in
            func item(_ type: SampleType, _ normal: Double, second: Int) -> String {
                let (type, value) = override(person, second, type) ?? (type, normal)
                return PhoneStream.item(
                    type.rawValue, value, at: wallStart.addingTimeInterval(Double(second) + Double(person) / Double(individuals)))
            }
            let first = round * every
            return (first..<first + every).map { item(.heartRate, 72, second: $0) }
                + [item(.oxygenSaturation, 97, second: first), item(.bloodGlucose, 110, second: first)]
        }
    }

    /// The low readings before the phase that sustained episodes need: heart rate every second
    /// for the 20 minutes before the episode's second, oxygen every 30 s for the 5 minutes before
    /// it, up to the phase's start (the stream goes on from there). Stored without detection.
    static func storeLowHistory(_ episodes: [Int: Episode], ids: [Int64], wallStart: Date, individuals: Int, database: Database) async throws {
        let store = HealthDataStore(database: database, partitions: PartitionMaintainer(database: database))
        let sustained = episodes.filter { $0.value.kind.sustained }.map { ($0.key, $0.value) }
        _ = try await BenchServer.concurrently(sustained.count, 8) { index in
            let (person, episode) = sustained[index]
            let (type, value, span, step): (SampleType, Float, Int, Int) =
                episode.kind == .heartRateLow ? (.heartRate, 30, 20 * 60, 1) : (.oxygenSaturation, 85, 5 * 60, 30)
            var samples = SampleColumns()
            for second in stride(from: episode.second - span, to: 0, by: step) {
                let start = wallStart.addingTimeInterval(Double(second) + Double(person) / Double(individuals))
                samples.append(
                    type: type.storageCode, start: start, value: value, durationMs: nil,
                    key: DedupeKey.forSample(startMilliseconds: start.epochMilliseconds, value: value))
            }
            _ = try await store.ingest(individualId: ids[person], samples: samples, locations: LocationColumns(), announce: false)
        }
    }
}

/// The individuals' device endpoints: checks each signature, notes when each `alert.raised`
/// arrived, by person and rule name.
final class DeviceReceiver: Sendable {
    struct Key: Hashable, Sendable {
        let person: Int
        let rule: String
    }

    let secrets = Mutex<[Int: String]>([:])
    let alerts = Mutex<[Key: [ContinuousClock.Instant]]>([:])
    let badSignatures = Mutex(0)
    let redelivered = Mutex(0)
    private let deliveryIds = Mutex<Set<String>>([])

    var alertCount: Int { alerts.withLock { $0.count } }

    func start(port: Int) -> Task<Void, any Error> {
        let router = Router()
        router.post("i/{person}") { request, context -> Response in
            let arrived = ContinuousClock.now
            let bytes = Array(try await request.body.collect(upTo: 1 << 20).readableBytesView)
            let person = context.parameters.get("person", as: Int.self) ?? -1
            let secret = self.secrets.withLock { $0[person] } ?? ""
            if !WebhookSignature.verify(header: request.headers[HTTPField.Name("Data4Help-Signature")!] ?? "", secret: secret, body: bytes) {
                self.badSignatures.withLock { $0 += 1 }
            }
            guard self.deliveryIds.withLock({ $0.insert(request.headers[HTTPField.Name("Data4Help-Delivery")!] ?? "").inserted }) else {
                self.redelivered.withLock { $0 += 1 }
                return Response(status: .noContent)
            }
            if let json = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any], json["type"] as? String == "alert.raised",
                let rule = (json["data"] as? [String: Any])?["ruleName"] as? String
            {
                self.alerts.withLock { $0[Key(person: person, rule: rule), default: []].append(arrived) }
            }
            return Response(status: .noContent)
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
        return Task { try await app.runService(gracefulShutdownSignals: []) }
    }
}

/// A value many tasks update, for a load generator's notes.
final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) {
        mutex = Mutex(value)
    }

    func withLock<Result>(_ body: (inout sending Value) throws -> sending Result) rethrows -> sending Result {
        try mutex.withLock(body)
    }
}
