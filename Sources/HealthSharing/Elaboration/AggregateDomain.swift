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

    package init?(_ type: SampleType) {
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
