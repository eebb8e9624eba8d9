import ArgumentParser
import Data4HelpCore
import DatabaseLink
import Foundation
import HealthSharing

/// `data4help bench storage`: what an individual's readings cost on disk, for three profiles, and
/// what that makes for a million individuals — the numbers behind the README's storage model.
///
/// Each profile's readings go in as a phone sends them (one upload per hour of readings, through
/// `HealthDataStore.ingest`, the SQL every upload runs), for its own individuals, once in minute
/// blocks (uploads), once in minute blocks then compacted (`SampleCompactionStore.compact`, what
/// `SampleCompactor` does to every hour behind the horizon, migration 0046), once in hour blocks
/// as imports write settled history (migration 0032), and once in hour blocks then compacted (what
/// the compactor's pass makes of an ended import's span, migration 0051); the bytes each added —
/// `sample_blocks` with indexes and TOAST, packed, and the daily, weekly and monthly rollups — are
/// measured, per reading and per individual-year.
struct StorageBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "storage", abstract: "Bytes per reading and per individual-year, three profiles.")

    @Option(help: "Days of readings per individual.") var days = 14
    @Option(help: "Individuals per sparse profile (the 1 Hz profile has a tenth, at least 2).") var individuals = 40

    func validate() throws {
        guard (1...3_650).contains(days) else { throw ValidationError("--days must be between 1 and 3650") }
        guard (1...100_000).contains(individuals) else { throw ValidationError("--individuals must be between 1 and 100000") }
    }

    /// How an individual's day of readings is spread.
    struct Profile: Sendable {
        let name: String
        let type: SampleType
        let individuals: Int
        /// Seconds of the day at which the individual has a reading.
        let seconds: @Sendable (_ day: Int) -> [Int]
        let values: ClosedRange<Float>
        let step: Float
    }

    func run() async throws {
        let sparse = individuals
        let profiles = [
            Profile(
                name: "Apple Watch: heart rate every 5 min, every 5 s in a 45-min workout", type: .heartRate, individuals: sparse,
                seconds: { day in
                    let workout = (17 * 3_600 + (day % 3) * 1_800)
                    return Array(Set(Array(stride(from: 0, to: 86_400, by: 300)) + Array(stride(from: workout, to: workout + 2_700, by: 5)))).sorted()
                }, values: 50...170, step: 6),
            Profile(
                name: "1 Hz wearable: heart rate every second", type: .heartRate, individuals: max(2, sparse / 10),
                seconds: { _ in Array(0..<86_400) }, values: 45...180, step: 2),
            Profile(
                name: "CGM: blood glucose every 5 min", type: .bloodGlucose, individuals: sparse,
                seconds: { _ in Array(stride(from: 0, to: 86_400, by: 300)) }, values: 60...250, step: 8),
        ]
        try await BenchServer.run { server in
            print("data4help bench storage — \(days) days per individual, uploaded an hour at a time")
            let database = Database(configuration: server.databaseURL.clientConfiguration(maximumConnections: 6), logger: server.logger)
            let results = try await database.whileRunning {
                var results: [(Profile, String, Measured)] = []
                for (index, profile) in profiles.enumerated() {
                    for (number, layout) in Layout.allCases.enumerated() {
                        let measured = try await measure(profile, number: index * Layout.allCases.count + number, layout: layout, database: database)
                        results.append((profile, layout.rawValue, measured))
                    }
                }
                return results
            }
            print("")
            print(
                "profile                                                              layout               readings/day  B/reading  rollups B/day  MB per individual-year  TB per million"
            )
            for (profile, layout, measured) in results {
                let perDay = Double(measured.samples) / Double(profile.individuals * days)
                let yearBytes = (Double(measured.blockBytes + measured.rollupBytes) / Double(profile.individuals * days)) * 365
                print(
                    String(
                        format: "%@ %@ %12.0f %10.1f %14.0f %23.2f %15.2f", profile.name.padding(toLength: 68, withPad: " ", startingAt: 0),
                        layout.padding(toLength: 20, withPad: " ", startingAt: 0), perDay,
                        Double(measured.blockBytes) / Double(measured.samples), Double(measured.rollupBytes) / Double(profile.individuals * days),
                        yearBytes / 1e6, yearBytes * 1e6 / 1e12))
                BenchSummary.record(
                    "storage", "\(profile.name), \(layout): bytes per reading / MB per individual-year", format: "%.1f / %.2f",
                    Double(measured.blockBytes) / Double(measured.samples), yearBytes / 1e6)
            }
        }
    }

    enum Layout: String, CaseIterable {
        case minuteBlocks = "minute blocks"
        case compacted = "compacted"
        case hourBlocks = "hour blocks"
        /// Hour blocks as an import writes them, then the compactor's pass its request makes
        /// (migration 0051).
        case importedCompacted = "imported, compacted"
    }

    struct Measured {
        var samples: Int64
        var blockBytes: Int64
        var rollupBytes: Int64
    }

    private func measure(_ profile: Profile, number: Int, layout: Layout, database: Database) async throws -> Measured {
        let store = HealthDataStore(database: database, partitions: PartitionMaintainer(database: database))
        let ids = try await BenchServer.insertIndividuals(profile.individuals, named: "storage\(number)", database: database)
        let before = try await footprint(store)
        let firstDay = (Date().timeIntervalSince1970 / 86_400).rounded(.down) * 86_400 - Double(days + 1) * 86_400
        let (days, identifiers) = (self.days, ids)
        _ = try await BenchServer.concurrently(identifiers.count, 4) { person in
            var generator = SplitMix(seed: UInt64(truncatingIfNeeded: number &* 1_000_003 &+ person))
            var value = (profile.values.lowerBound + profile.values.upperBound) / 2
            for day in 0..<days {
                let seconds = profile.seconds(day)
                var hourStart = 0
                while hourStart < seconds.count {
                    let hour = seconds[hourStart] / 3_600
                    var hourEnd = hourStart
                    var columns = SampleColumns()
                    while hourEnd < seconds.count, seconds[hourEnd] / 3_600 == hour {
                        value = min(profile.values.upperBound, max(profile.values.lowerBound, value + generator.step(profile.step)))
                        let at = firstDay + Double(day * 86_400 + seconds[hourEnd])
                        columns.append(
                            type: profile.type.storageCode, start: Date(timeIntervalSince1970: at), value: value.rounded(), durationMs: nil,
                            key: DedupeKey.forClientId("s\(day)-\(seconds[hourEnd])"))
                        hourEnd += 1
                    }
                    _ = try await store.ingest(
                        individualId: identifiers[person], samples: columns, locations: LocationColumns(), announce: false,
                        wholeHoursBefore: layout == .hourBlocks || layout == .importedCompacted ? Date() : nil)
                    hourStart = hourEnd
                }
            }
        }
        if layout == .compacted || layout == .importedCompacted {
            let now = Date().timeIntervalSince1970
            let compaction = SampleCompactionStore(database: database)
            for id in ids {
                _ = try await compaction.compact(
                    individualId: id, from: .distantPast, before: Date(timeIntervalSince1970: (now / 3_600).rounded(.down) * 3_600))
            }
        }
        let after = try await footprint(store)
        return Measured(
            samples: after.samples - before.samples, blockBytes: after.blockBytes - before.blockBytes,
            rollupBytes: after.rollupBytes - before.rollupBytes)
    }

    private func footprint(_ store: HealthDataStore) async throws -> Measured {
        let blocks = try await store.storageFootprint(packed: true)
        return Measured(samples: blocks.samples, blockBytes: blocks.bytes, rollupBytes: try await store.rollupFootprint())
    }
}

/// A small deterministic generator (SplitMix64) for the readings' random walk.
struct SplitMix {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A step of the walk, uniform in -size...size.
    mutating func step(_ size: Float) -> Float {
        (Float(next() >> 40) / Float(1 << 24) * 2 - 1) * size
    }
}
