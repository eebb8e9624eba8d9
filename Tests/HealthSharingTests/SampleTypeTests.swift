import HealthSharing
import Testing

@Suite("The data-type catalogue: units, conversions, physiological ranges")
struct SampleTypeTests {
    @Test func storageCodesAreUniqueAndRoundTrip() {
        let codes = SampleType.allCases.map(\.storageCode)
        #expect(Set(codes).count == codes.count)
        for type in SampleType.allCases { #expect(SampleType(storageCode: type.storageCode) == type) }
        #expect(SampleType(storageCode: 0) == nil)
    }

    @Test func canonicalUnitIsTheDefault() throws {
        #expect(try SampleType.heartRate.canonicalValue(.number(72), unit: nil) == 72)
        #expect(try SampleType.heartRate.canonicalValue(.number(72), unit: "bpm") == 72)
    }

    @Test func acceptedUnitsAreConverted() throws {
        #expect(try SampleType.bloodGlucose.canonicalValue(.number(5.5), unit: "mmol/L") == 5.5 * 18.016)
        #expect(try SampleType.distance.canonicalValue(.number(1.5), unit: "km") == 1500)
        #expect(abs(try SampleType.bodyTemperature.canonicalValue(.number(98.6), unit: "degF") - 37) < 1e-9)
        #expect(abs(try SampleType.activeEnergy.canonicalValue(.number(418.4), unit: "kJ") - 100) < 1e-9)
    }

    @Test(arguments: [(SampleType.heartRate, "mmHg"), (.bloodGlucose, "mg"), (.sleep, "h"), (.oxygenSaturation, "fraction")])
    func unitThatDoesNotFitIsRefused(type: SampleType, unit: String) {
        let value: RawSampleValue = type == .sleep ? .word("deep") : .number(50)
        #expect(throws: SampleRejection.self) { try type.canonicalValue(value, unit: unit) }
    }

    @Test(arguments: [0.0, 400.0, 19.9, 250.1, .nan, .infinity])
    func impossibleHeartRatesAreRefused(_ value: Double) {
        #expect(throws: SampleRejection.self) { try SampleType.heartRate.canonicalValue(.number(value), unit: "bpm") }
    }

    @Test func rangeIsCheckedAfterConversion() {
        // 30 mmol/L is 540 mg/dL (possible); 100 mmol/L is 1801.6 mg/dL (not).
        #expect(throws: Never.self) { try SampleType.bloodGlucose.canonicalValue(.number(30), unit: "mmol/L") }
        #expect(throws: SampleRejection.self) { try SampleType.bloodGlucose.canonicalValue(.number(100), unit: "mmol/L") }
    }

    @Test func sleepTakesAStageNotANumber() throws {
        #expect(try SampleType.sleep.canonicalValue(.word("rem"), unit: nil) == SleepStage.rem.storedValue)
        #expect(throws: SampleRejection.self) { try SampleType.sleep.canonicalValue(.word("napping"), unit: nil) }
        #expect(throws: SampleRejection.self) { try SampleType.sleep.canonicalValue(.number(2), unit: nil) }
        #expect(throws: SampleRejection.self) { try SampleType.heartRate.canonicalValue(.word("fast"), unit: nil) }
    }

    @Test func intervalTypesAreMarked() {
        #expect(SampleType.allCases.filter(\.isInterval) == [.stepCount, .distance, .activeEnergy, .sleep])
    }
}
