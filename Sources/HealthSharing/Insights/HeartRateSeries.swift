import Foundation

/// One heart-rate reading: when (milliseconds since the epoch) and beats per minute.
package struct HeartRatePoint: Sendable, Equatable, Codable {
    package var timeMs: Int64
    package var bpm: Double

    package init(timeMs: Int64, bpm: Double) {
        self.timeMs = timeMs
        self.bpm = bpm
    }
}

/// The maximum heart rate analyses are measured against: the one the person measured and set,
/// else the common estimate 220 − age (at the workout's date).
package struct MaximumHeartRate: Sendable, Equatable, Codable {
    package enum Source: String, Sendable, Codable {
        case measured
        case ageEstimate
    }

    package var bpm: Double
    package var source: Source

    package init(bpm: Double, source: Source) {
        self.bpm = bpm
        self.source = source
    }

    /// The person's measured maximum when set, else 220 − their age in whole years on `date`.
    package static func of(measured: Double?, birthDate: DateComponents?, on date: Date, calendar: Calendar) -> MaximumHeartRate {
        if let measured { return MaximumHeartRate(bpm: measured, source: .measured) }
        var age = 40  // without a birth date (never: registration requires one), a middle-aged estimate
        if let birthDate, let born = calendar.date(from: birthDate) {
            age = calendar.dateComponents([.year], from: born, to: date).year ?? age
        }
        return MaximumHeartRate(bpm: Double(220 - min(max(age, 0), 120)), source: .ageEstimate)
    }
}

/// Readings further apart than this are a gap: no rise, zone time or resting window spans it.
package enum HeartRateGaps {
    package static let maximumMs: Int64 = 5_000
}
