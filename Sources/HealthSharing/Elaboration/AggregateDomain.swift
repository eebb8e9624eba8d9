/// The public, fixed parameters of aggregating one data type: how an individual's day becomes a
/// value, the range every individual's value is clamped to (which bounds what one person can
/// change: the sensitivity), the histogram bins, and the fixed-point unit noise is added in.
package struct AggregateDomain: Sendable, Equatable {
    package enum Daily: Sendable, Equatable {
        /// The day's total (steps, distance, energy): an individual's value is their mean daily total.
        case total
        /// Readings (heart rate, blood pressure…): an individual's value is their mean reading (all readings of the window over their number).
        case mean
    }

    package let daily: Daily
    package let lower: Double
    package let upper: Double
    package let binWidth: Double
    /// Values are summed in units of 1/`resolution` (integers), so that the noise is exact.
    package let resolution: Double

    package init?(_ subject: AggregateSubject) {
        let type: SampleType
        switch subject {
        case .sample(let sampleType): type = sampleType
        // A night's resting heart rate: each individual's value is their mean over the window's nights.
        case .restingHeartRate:
            self.init(.mean, 30, 120, bin: 5, resolution: 100)
            return
        // A day's workout minutes: each individual's value is their mean daily total.
        case .workoutSummary:
            self.init(.total, 0, 300, bin: 15, resolution: 1)
            return
        }
        switch type {
        case .heartRate: self.init(.mean, 30, 220, bin: 10, resolution: 100)
        case .stepCount: self.init(.total, 0, 30_000, bin: 2_000, resolution: 1)
        case .distance: self.init(.total, 0, 40_000, bin: 2_500, resolution: 1)
        case .activeEnergy: self.init(.total, 0, 4_000, bin: 250, resolution: 1)
        case .bloodPressureSystolic: self.init(.mean, 70, 220, bin: 10, resolution: 100)
        case .bloodPressureDiastolic: self.init(.mean, 40, 130, bin: 5, resolution: 100)
        case .oxygenSaturation: self.init(.mean, 70, 100, bin: 2, resolution: 100)
        case .bodyTemperature: self.init(.mean, 34, 42, bin: 0.5, resolution: 100)
        case .bloodGlucose: self.init(.mean, 40, 400, bin: 20, resolution: 100)
        case .respiratoryRate: self.init(.mean, 5, 40, bin: 2.5, resolution: 100)
        case .bodyMass: self.init(.mean, 30, 250, bin: 10, resolution: 100)
        case .sleep: return nil
        }
    }

    private init(_ daily: Daily, _ lower: Double, _ upper: Double, bin: Double, resolution: Double) {
        self.daily = daily
        self.lower = lower
        self.upper = upper
        self.binWidth = bin
        self.resolution = resolution
    }

    package var midpoint: Double { (lower + upper) / 2 }
    package var binCount: Int { Int(((upper - lower) / binWidth).rounded(.up)) }

    /// The bin edges, `[lower, lower + width)`, …, the last one closed at `upper`.
    package var bins: [(from: Double, to: Double)] {
        (0..<binCount).map { (lower + Double($0) * binWidth, min(upper, lower + Double($0 + 1) * binWidth)) }
    }

    /// How much one individual can move a centred sum (Σ (value − midpoint)), in fixed-point units.
    var centredSensitivity: Int64 { Int64(((upper - lower) / 2 * resolution).rounded(.up)) }
    /// How much one individual can move a plain sum, in fixed-point units.
    var sumSensitivity: Int64 { Int64((max(abs(lower), abs(upper)) * resolution).rounded(.up)) }
}

/// What an aggregate is over: a type people upload, or a value the server derives per day
/// (issue 25) and keeps as that day's rollup — each night's resting heart rate (code 13), each
/// day's workouts and their minutes (code 14; migration 0041).
package enum AggregateSubject: Sendable, Hashable {
    case sample(SampleType)
    case restingHeartRate
    case workoutSummary

    /// Every subject, aggregatable or not (`AggregateDomain` says).
    package static var all: [AggregateSubject] { SampleType.allCases.map(Self.sample) + [.restingHeartRate, .workoutSummary] }

    package init?(rawValue: String) {
        switch rawValue {
        case "restingHeartRate": self = .restingHeartRate
        case "workoutSummary": self = .workoutSummary
        default:
            guard let type = SampleType(rawValue: rawValue) else { return nil }
            self = .sample(type)
        }
    }

    package var rawValue: String {
        switch self {
        case .sample(let type): type.rawValue
        case .restingHeartRate: "restingHeartRate"
        case .workoutSummary: "workoutSummary"
        }
    }

    /// The rollups' `sample_type`.
    package var storageCode: Int16 {
        switch self {
        case .sample(let type): type.storageCode
        case .restingHeartRate: 13
        case .workoutSummary: 14
        }
    }

    /// The unit of an individual's value.
    package var unit: String? {
        switch self {
        case .sample(let type):
            if case .quantity(let unit, _, _) = type.definition { return unit }
            return nil
        case .restingHeartRate: return "bpm"
        case .workoutSummary: return "min"
        }
    }
}
