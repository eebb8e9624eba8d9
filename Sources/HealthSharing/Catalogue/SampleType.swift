/// The kinds of health data the platform stores. Wire names follow HealthKit's identifiers.
///
/// `storageCode` is what the database stores (a `smallint`): codes are permanent, never reused.
package enum SampleType: String, Sendable, CaseIterable {
    case heartRate
    case stepCount
    case distance
    case bloodPressureSystolic
    case bloodPressureDiastolic
    case oxygenSaturation
    case bodyTemperature
    case bloodGlucose
    case respiratoryRate
    case bodyMass
    case activeEnergy
    case sleep

    /// Permanent database code of the type.
    package var storageCode: Int16 {
        switch self {
        case .heartRate: 1
        case .stepCount: 2
        case .distance: 3
        case .bloodPressureSystolic: 4
        case .bloodPressureDiastolic: 5
        case .oxygenSaturation: 6
        case .bodyTemperature: 7
        case .bloodGlucose: 8
        case .respiratoryRate: 9
        case .bodyMass: 10
        case .activeEnergy: 11
        case .sleep: 12
        }
    }

    package init?(storageCode: Int16) {
        guard let type = Self.allCases.first(where: { $0.storageCode == storageCode }) else { return nil }
        self = type
    }

    /// Whether a sample covers a time interval (`start`–`end`, e.g. steps) or one instant.
    package var isInterval: Bool {
        switch self {
        case .stepCount, .distance, .activeEnergy, .sleep: true
        default: false
        }
    }

    /// The rules for this type's values: unit, accepted units, range or categories.
    package var definition: SampleTypeDefinition {
        switch self {
        case .heartRate:
            .quantity(unit: "bpm", also: [UnitConversion(unit: "count/min", factor: 1)], range: 20...250)
        case .stepCount:
            .quantity(unit: "count", range: 0...100_000)
        case .distance:
            .quantity(unit: "m", also: [UnitConversion(unit: "km", factor: 1000)], range: 0...1_000_000)
        case .bloodPressureSystolic:
            .quantity(unit: "mmHg", range: 50...280)
        case .bloodPressureDiastolic:
            .quantity(unit: "mmHg", range: 20...180)
        case .oxygenSaturation:
            .quantity(unit: "%", range: 50...100)
        case .bodyTemperature:
            .quantity(unit: "degC", also: [UnitConversion(unit: "degF", factor: 5.0 / 9.0, offset: -32)], range: 25...45)
        case .bloodGlucose:
            .quantity(unit: "mg/dL", also: [UnitConversion(unit: "mmol/L", factor: 18.016)], range: 10...1_500)
        case .respiratoryRate:
            .quantity(unit: "breaths/min", range: 2...80)
        case .bodyMass:
            .quantity(unit: "kg", also: [UnitConversion(unit: "lb", factor: 0.45359237)], range: 0.5...650)
        case .activeEnergy:
            .quantity(unit: "kcal", also: [UnitConversion(unit: "kJ", factor: 1 / 4.184)], range: 0...20_000)
        case .sleep:
            .category(SleepStage.allCases.map(\.rawValue))
        }
    }
}

/// Sleep stages, the values of a `sleep` sample. `asleep` is sleep whose stage the device did not
/// tell (HealthKit's "asleep, unspecified", and every night before watchOS 9); `inBed` is time in
/// bed, asleep or not (a phone's bedtime schedule).
package enum SleepStage: String, Sendable, CaseIterable {
    case awake, light, deep, rem, asleep, inBed

    /// The number stored in the value column for this stage.
    package var storedValue: Double {
        switch self {
        case .awake: 0
        case .light: 1
        case .deep: 2
        case .rem: 3
        case .asleep: 4
        case .inBed: 5
        }
    }
}

/// A unit accepted besides the canonical one: canonical = (value + offset) × factor.
package struct UnitConversion: Sendable, Equatable {
    package let unit: String
    package let factor: Double
    package let offset: Double

    package init(unit: String, factor: Double, offset: Double = 0) {
        self.unit = unit
        self.factor = factor
        self.offset = offset
    }
}

/// How a type's values are given and checked.
package enum SampleTypeDefinition: Sendable, Equatable {
    /// A number in `unit` (or in one of the `also` units, converted), within a physiologically
    /// possible `range` of the canonical unit.
    case quantity(unit: String, also: [UnitConversion] = [], range: ClosedRange<Double>)
    /// One of a fixed set of words.
    case category([String])
}
