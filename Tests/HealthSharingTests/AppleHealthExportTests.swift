import Foundation
import Testing
import UntrustedXML

@testable import HealthSharing

/// The export as the iPhone Health app writes it (HealthKit Export Version 14, iOS 17): the
/// internal DTD, `Me`, records of types we store and of types we do not, a blood-pressure
/// `Correlation` that repeats its two records, sleep stages old and new, a workout with its
/// statistics and route file, and units the export writes as-is (`mmol<180.15588000005408>/L`,
/// `%` as a fraction, `Cal`, `mi`, `degF`, `lb`).
@Suite("Apple Health export.xml")
struct AppleHealthExportTests {
    /// `Tests/Fixtures/AppleHealth/export.xml` (empty if unreadable: every test then fails).
    static let export =
        (try? String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../Fixtures/AppleHealth/export.xml")
                .standardized,
            encoding: .utf8
        )) ?? ""

    static func items(_ text: String, pieces: Int = 1 << 20) throws -> [AppleHealthExportReader.Item] {
        var reader = AppleHealthExportReader()
        var items: [AppleHealthExportReader.Item] = []
        let bytes = Array(text.utf8)
        for start in stride(from: 0, to: bytes.count, by: pieces) {
            try reader.feed(bytes[start..<min(bytes.count, start + pieces)]) { items.append($0) }
        }
        try reader.finish { items.append($0) }
        return items
    }

    static func samples(_ items: [AppleHealthExportReader.Item]) -> [RawIngestItem] {
        items.compactMap { if case .sample(let item) = $0 { item } else { nil } }
    }

    @Test func everyStoredTypeAndUnitIsReadIntoOurUnits() throws {
        let items = try Self.items(Self.export)
        let stored = try Self.samples(items).map { raw in
            (raw.type?.name ?? "", try #require(SampleType(rawValue: raw.type?.name ?? "")).canonicalValue(#require(raw.value), unit: raw.unit))
        }
        let expected: [(String, Double)] = [
            ("heartRate", 72), ("stepCount", 812), ("distance", 804.672), ("oxygenSaturation", 97), ("bloodGlucose", 99.085_734),
            ("bodyTemperature", 37), ("bodyMass", 68.038_855_5), ("activeEnergy", 4.2), ("respiratoryRate", 14.5),
            ("sleep", SleepStage.deep.storedValue), ("sleep", SleepStage.asleep.storedValue), ("sleep", SleepStage.inBed.storedValue),
            ("bloodPressureSystolic", 121), ("bloodPressureDiastolic", 79), ("bloodPressureSystolic", 121), ("bloodPressureDiastolic", 79),
        ]
        #expect(stored.map(\.0) == expected.map(\.0))
        for ((type, value), (_, wanted)) in zip(stored, expected) {
            #expect(abs(value - wanted) < 0.001, "\(type): \(value), not \(wanted)")
        }
    }

    @Test func timesSourcesAndIntervalsAreKept() throws {
        let samples = Self.samples(try Self.items(Self.export))
        let heart = try #require(samples.first)
        #expect(heart.start == "2026-11-19T08:30:00+01:00")
        #expect(heart.end == nil)  // an instant
        #expect(heart.source == "Anna’s Apple Watch")
        // The id is of the times as the export wrote them (an instant's end empty): stored ids
        // of earlier imports stay the same.
        #expect(heart.id == ImportIdentity.digest(["heartRate", "Anna’s Apple Watch", "2026-11-19T08:30:00+01:00", "", "72"], prefix: "ah:"))
        let steps = samples[1]
        #expect(steps.start == "2026-11-19T08:50:00+01:00" && steps.end == "2026-11-19T09:00:00+01:00")
        #expect(steps.source == "iPhone di Anna")
    }

    @Test func aRecordRepeatedByItsCorrelationHasTheSameIdAndOthersDiffer() throws {
        let samples = Self.samples(try Self.items(Self.export))
        let ids = samples.compactMap(\.id)
        #expect(ids.count == samples.count)
        #expect(Set(ids).count == samples.count - 2)  // the correlation's two records repeat two
        #expect(ids.allSatisfy { $0.hasPrefix("ah:") && $0.utf8.count == 35 })
    }

    @Test func otherTypesAreSkippedAndUnreadableRecordsSayWhy() throws {
        let items = try Self.items(Self.export)
        #expect(items.contains(.skipped(type: "HKQuantityTypeIdentifierFlightsClimbed")))
        let unreadable = items.compactMap { if case .unreadable(let type, let reason) = $0 { "\(type): \(reason)" } else { nil } }
        #expect(
            unreadable == [
                "HKQuantityTypeIdentifierHeartRate: startDate is missing or not a date such as 2023-05-01 08:30:00 +0200",
                "HKQuantityTypeIdentifierBloodGlucose: the unit mol/L is not read for bloodGlucose",
            ])
    }

    @Test func workoutsFromStatisticsAndFromOlderAttributes() throws {
        let workouts = try Self.items(Self.export).compactMap { if case .workout(let workout) = $0 { workout } else { nil } }
        #expect(workouts.count == 2)
        let run = try #require(workouts.first)
        #expect(run.activity == "running")
        #expect(run.durationSeconds == 1890)
        #expect(run.distanceMetres == 5120)
        #expect(run.energyKilocalories == 383)
        #expect(run.averageHeartRate == 151 && run.maximumHeartRate == 178)
        #expect(run.routeFiles == ["/workout-routes/route_2026-11-18_6.31pm.gpx"])
        #expect(run.start == Date(timeIntervalSince1970: 1_795_021_200))
        let ride = workouts[1]
        #expect(ride.activity == "cycling" && ride.durationSeconds == 5400 && ride.source == "Strava")
        #expect(abs((ride.distanceMetres ?? 0) - 48_280.32) < 0.01)
        #expect(abs((ride.energyKilocalories ?? 0) - 501.91) < 0.01)
    }

    @Test func readInPiecesItReadsTheSame() throws {
        let whole = try Self.items(Self.export)
        for size in [1, 13, 1000] { #expect(try Self.items(Self.export, pieces: size) == whole) }
    }

    /// A reader stopped anywhere (a crash) and a second one resumed from the first's checkpoint
    /// together hand out every item once: none lost, none twice.
    @Test func aReaderResumedFromACheckpointHandsOutTheRestOnce() throws {
        let whole = try Self.items(Self.export)
        let bytes = Array(Self.export.utf8)
        for stop in stride(from: 1, to: bytes.count, by: 97) {
            var first = AppleHealthExportReader()
            var items: [AppleHealthExportReader.Item] = []
            try first.feed(bytes[..<stop]) { items.append($0) }
            guard let checkpoint = first.checkpoint else {
                #expect(items.isEmpty, "items handed out with no checkpoint (stopped at \(stop))")
                continue
            }
            var second = try AppleHealthExportReader(resumingAt: checkpoint)
            try second.feed(bytes[Int(checkpoint.offset)...]) { items.append($0) }
            try second.finish { items.append($0) }
            #expect(items == whole, "stopped at \(stop), resumed at \(checkpoint.offset)")
        }
    }

    @Test func aCutOffExportSaysWhereAndAnEntityIsRefused() throws {
        let cut = String(decoding: Array(Self.export.utf8).prefix(4_000), as: UTF8.self)
        let error = try #require(throws: XMLReadError.self) { try Self.items(cut) }
        #expect(error.line > 30)
        let laughs = Self.export.replacingOccurrences(of: "<!ELEMENT ExportDate EMPTY>", with: #"<!ENTITY lol "lol"><!ELEMENT ExportDate EMPTY>"#)
        #expect(throws: UntrustedXMLError.entityDeclaration) { try Self.items(laughs) }
        #expect(throws: XMLReadError.self) { try Self.items(#"<?xml version="1.0"?><gpx></gpx>"#) }
    }
}
