import Foundation
@testable import HealthSharing
import Testing
import UntrustedXML

/// The export as the iPhone Health app writes it (HealthKit Export Version 14, iOS 17): the
/// internal DTD, `Me`, records of types we store and of types we do not, a blood-pressure
/// `Correlation` that repeats its two records, sleep stages old and new, a workout with its
/// statistics and route file, and units the export writes as-is (`mmol<180.15588000005408>/L`,
/// `%` as a fraction, `Cal`, `mi`, `degF`, `lb`).
@Suite("Apple Health export.xml")
struct AppleHealthExportTests {
    static let export = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE HealthData [
        <!-- HealthKit Export Version: 14 -->
        <!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary|ClinicalRecord|Audiogram|VisionPrescription)*)>
        <!ATTLIST HealthData
          locale CDATA #REQUIRED
        >
        <!ELEMENT ExportDate EMPTY>
        <!ATTLIST ExportDate
          value CDATA #REQUIRED
        >
        <!ELEMENT Record ((MetadataEntry|HeartRateVariabilityMetadataList)*)>
        <!ATTLIST Record
          type          CDATA #REQUIRED
          unit          CDATA #IMPLIED
          value         CDATA #IMPLIED
          sourceName    CDATA #REQUIRED
          sourceVersion CDATA #IMPLIED
          device        CDATA #IMPLIED
          creationDate  CDATA #IMPLIED
          startDate     CDATA #REQUIRED
          endDate       CDATA #REQUIRED
        >
        ]>
        <HealthData locale="it_IT">
         <ExportDate value="2026-11-20 09:12:44 +0100"/>
         <Me HKCharacteristicTypeIdentifierDateOfBirth="1990-04-02" HKCharacteristicTypeIdentifierBiologicalSex="HKBiologicalSexFemale"/>
         <Record type="HKQuantityTypeIdentifierHeartRate" sourceName="Anna’s Apple Watch" sourceVersion="10.1" device="&lt;&lt;HKDevice: 0x283f6c2d0&gt;, name:Apple Watch, manufacturer:Apple Inc., model:Watch, hardware:Watch6,2, software:10.1&gt;" unit="count/min" creationDate="2026-11-19 08:31:02 +0100" startDate="2026-11-19 08:30:00 +0100" endDate="2026-11-19 08:30:00 +0100" value="72">
          <MetadataEntry key="HKMetadataKeyHeartRateMotionContext" value="0"/>
         </Record>
         <Record type="HKQuantityTypeIdentifierStepCount" sourceName="iPhone di Anna" unit="count" creationDate="2026-11-19 09:01:00 +0100" startDate="2026-11-19 08:50:00 +0100" endDate="2026-11-19 09:00:00 +0100" value="812"/>
         <Record type="HKQuantityTypeIdentifierDistanceWalkingRunning" sourceName="iPhone di Anna" unit="mi" startDate="2026-11-19 08:50:00 +0100" endDate="2026-11-19 09:00:00 +0100" value="0.5"/>
         <Record type="HKQuantityTypeIdentifierOxygenSaturation" sourceName="Anna’s Apple Watch" unit="%" startDate="2026-11-19 03:10:00 +0100" endDate="2026-11-19 03:10:00 +0100" value="0.97"/>
         <Record type="HKQuantityTypeIdentifierBloodGlucose" sourceName="Contour" unit="mmol&lt;180.15588000005408&gt;/L" startDate="2026-11-19 07:00:00 +0100" endDate="2026-11-19 07:00:00 +0100" value="5.5"/>
         <Record type="HKQuantityTypeIdentifierBodyTemperature" sourceName="Thermo" unit="degF" startDate="2026-11-19 07:05:00 +0100" endDate="2026-11-19 07:05:00 +0100" value="98.6"/>
         <Record type="HKQuantityTypeIdentifierBodyMass" sourceName="Scale" unit="lb" startDate="2026-11-19 07:10:00 +0100" endDate="2026-11-19 07:10:00 +0100" value="150"/>
         <Record type="HKQuantityTypeIdentifierActiveEnergyBurned" sourceName="Anna’s Apple Watch" unit="Cal" startDate="2026-11-19 08:30:00 +0100" endDate="2026-11-19 08:31:00 +0100" value="4.2"/>
         <Record type="HKQuantityTypeIdentifierRespiratoryRate" sourceName="Anna’s Apple Watch" unit="count/min" startDate="2026-11-19 03:00:00 +0100" endDate="2026-11-19 03:00:00 +0100" value="14.5"/>
         <Record type="HKQuantityTypeIdentifierFlightsClimbed" sourceName="iPhone di Anna" unit="count" startDate="2026-11-19 08:50:00 +0100" endDate="2026-11-19 09:00:00 +0100" value="2"/>
         <Record type="HKCategoryTypeIdentifierSleepAnalysis" sourceName="Anna’s Apple Watch" startDate="2026-11-19 01:00:00 +0100" endDate="2026-11-19 01:30:00 +0100" value="HKCategoryValueSleepAnalysisAsleepDeep"/>
         <Record type="HKCategoryTypeIdentifierSleepAnalysis" sourceName="iPhone di Anna" startDate="2022-01-10 23:00:00 +0100" endDate="2022-01-11 06:30:00 +0100" value="HKCategoryValueSleepAnalysisAsleep"/>
         <Record type="HKCategoryTypeIdentifierSleepAnalysis" sourceName="iPhone di Anna" startDate="2022-01-10 22:40:00 +0100" endDate="2022-01-11 06:40:00 +0100" value="HKCategoryValueSleepAnalysisInBed"/>
         <Record type="HKQuantityTypeIdentifierBloodPressureSystolic" sourceName="Omron" unit="mmHg" startDate="2026-11-19 07:20:00 +0100" endDate="2026-11-19 07:20:00 +0100" value="121"/>
         <Record type="HKQuantityTypeIdentifierBloodPressureDiastolic" sourceName="Omron" unit="mmHg" startDate="2026-11-19 07:20:00 +0100" endDate="2026-11-19 07:20:00 +0100" value="79"/>
         <Correlation type="HKCorrelationTypeIdentifierBloodPressure" sourceName="Omron" startDate="2026-11-19 07:20:00 +0100" endDate="2026-11-19 07:20:00 +0100">
          <Record type="HKQuantityTypeIdentifierBloodPressureSystolic" sourceName="Omron" unit="mmHg" startDate="2026-11-19 07:20:00 +0100" endDate="2026-11-19 07:20:00 +0100" value="121"/>
          <Record type="HKQuantityTypeIdentifierBloodPressureDiastolic" sourceName="Omron" unit="mmHg" startDate="2026-11-19 07:20:00 +0100" endDate="2026-11-19 07:20:00 +0100" value="79"/>
         </Correlation>
         <Record type="HKQuantityTypeIdentifierHeartRate" sourceName="Anna’s Apple Watch" unit="count/min" startDate="19/11/2026 08:30" endDate="19/11/2026 08:30" value="70"/>
         <Record type="HKQuantityTypeIdentifierBloodGlucose" sourceName="Contour" unit="mol/L" startDate="2026-11-19 07:00:00 +0100" endDate="2026-11-19 07:00:00 +0100" value="0.0055"/>
         <Workout workoutActivityType="HKWorkoutActivityTypeRunning" duration="31.5" durationUnit="min" sourceName="Anna’s Apple Watch" startDate="2026-11-18 18:00:00 +0100" endDate="2026-11-18 18:31:30 +0100">
          <MetadataEntry key="HKIndoorWorkout" value="0"/>
          <WorkoutEvent type="HKWorkoutEventTypeSegment" date="2026-11-18 18:00:00 +0100" duration="10" durationUnit="min"/>
          <WorkoutStatistics type="HKQuantityTypeIdentifierActiveEnergyBurned" startDate="2026-11-18 18:00:00 +0100" endDate="2026-11-18 18:31:30 +0100" sum="383" unit="Cal"/>
          <WorkoutStatistics type="HKQuantityTypeIdentifierDistanceWalkingRunning" startDate="2026-11-18 18:00:00 +0100" endDate="2026-11-18 18:31:30 +0100" sum="5.12" unit="km"/>
          <WorkoutStatistics type="HKQuantityTypeIdentifierHeartRate" startDate="2026-11-18 18:00:00 +0100" endDate="2026-11-18 18:31:30 +0100" average="151" minimum="98" maximum="178" unit="count/min"/>
          <WorkoutRoute sourceName="Anna’s Apple Watch" startDate="2026-11-18 18:00:05 +0100" endDate="2026-11-18 18:31:25 +0100">
           <FileReference path="/workout-routes/route_2026-11-18_6.31pm.gpx"/>
          </WorkoutRoute>
         </Workout>
         <Workout workoutActivityType="HKWorkoutActivityTypeCycling" duration="1.5" durationUnit="hr" totalDistance="30" totalDistanceUnit="mi" totalEnergyBurned="2100" totalEnergyBurnedUnit="kJ" sourceName="Strava" startDate="2021-06-01 07:00:00 +0200" endDate="2021-06-01 08:30:00 +0200"/>
         <ActivitySummary dateComponents="2026-11-19" activeEnergyBurned="420" activeEnergyBurnedGoal="500" activeEnergyBurnedUnit="Cal"/>
        </HealthData>
        """

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
            (raw.type ?? "", try #require(SampleType(rawValue: raw.type ?? "")).canonicalValue(#require(raw.value), unit: raw.unit))
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
        #expect(unreadable == [
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

    @Test func aCutOffExportSaysWhereAndAnEntityIsRefused() throws {
        let cut = String(decoding: Array(Self.export.utf8).prefix(4_000), as: UTF8.self)
        let error = try #require(throws: XMLReadError.self) { try Self.items(cut) }
        #expect(error.line > 30)
        let laughs = Self.export.replacingOccurrences(of: "<!ELEMENT ExportDate EMPTY>", with: #"<!ENTITY lol "lol"><!ELEMENT ExportDate EMPTY>"#)
        #expect(throws: UntrustedXMLError.entityDeclaration) { try Self.items(laughs) }
        #expect(throws: XMLReadError.self) { try Self.items(#"<?xml version="1.0"?><gpx></gpx>"#) }
    }
}
