/// Why one item of a batch was refused; `reason` is shown to the phone next to the item's index.
package struct SampleRejection: Error, Equatable, Sendable {
    package let reason: String

    package init(_ reason: String) {
        self.reason = reason
    }
}

/// What a client sent as a sample's value: a number, or a word for category types.
package enum RawSampleValue: Sendable, Equatable {
    case number(Double)
    case word(String)
}

extension SampleType {
    /// The value in this type's canonical unit, or why it cannot be stored.
    ///
    /// A unit that does not fit the type, a word for a quantity (or a number for a category),
    /// and a value outside the physiologically possible range are all refused.
    package func canonicalValue(_ raw: RawSampleValue, unit: String?) throws(SampleRejection) -> Double {
        switch (definition, raw) {
        case (.quantity, .number(let number)):
            return try scale(unit: unit).canonical(number)
        case (.quantity(let canonical, _, _), .word):
            throw SampleRejection("\(rawValue) needs a numeric value in \(canonical)")
        case (.category(let words), .word(let word)):
            guard unit == nil, let stage = SleepStage(rawValue: word), words.contains(word) else {
                throw SampleRejection("\(rawValue) value must be one of \(words.joined(separator: ", "))")
            }
            return stage.storedValue
        case (.category(let words), .number):
            throw SampleRejection("\(rawValue) value must be one of \(words.joined(separator: ", "))")
        }
    }

    /// Whether values of this type are words (sleep stages) rather than numbers.
    package var isCategory: Bool {
        if case .category = definition { true } else { false }
    }

    /// How a number in `unit` (nil: the canonical unit) becomes this quantity type's canonical
    /// value, found once for many values (a series); refused when the unit does not fit.
    package func scale(unit: String?) throws(SampleRejection) -> QuantityScale {
        guard case .quantity(let canonical, let conversions, let range) = definition else {
            throw SampleRejection("\(rawValue) needs a word, not a number")
        }
        if unit == nil || unit == canonical { return QuantityScale(type: self, canonicalUnit: canonical, offset: 0, factor: 1, range: range) }
        guard let conversion = conversions.first(where: { $0.unit == unit }) else {
            let accepted = ([canonical] + conversions.map(\.unit)).joined(separator: ", ")
            throw SampleRejection("unit \(unit ?? "") does not fit \(rawValue) (use \(accepted))")
        }
        return QuantityScale(type: self, canonicalUnit: canonical, offset: conversion.offset, factor: conversion.factor, range: range)
    }
}

/// A quantity type's conversion from one unit, and the range its canonical values must be in.
package struct QuantityScale: Sendable {
    let type: SampleType
    let canonicalUnit: String
    let offset: Double
    let factor: Double
    let range: ClosedRange<Double>

    /// `number` in the canonical unit, or why it cannot be stored.
    package func canonical(_ number: Double) throws(SampleRejection) -> Double {
        guard number.isFinite else { throw SampleRejection("value must be a finite number") }
        let converted = offset == 0 && factor == 1 ? number : (number + offset) * factor
        guard range.contains(converted) else {
            throw SampleRejection(
                "\(type.rawValue) must be between \(range.lowerBound.formattedValue) and \(range.upperBound.formattedValue) \(canonicalUnit)")
        }
        return converted
    }
}

extension Double {
    /// `40` rather than `40.0`, `0.5` as is: for messages and the type catalogue.
    var formattedValue: String {
        self == rounded() && abs(self) < 1e15 ? String(Int64(self)) : String(self)
    }
}
