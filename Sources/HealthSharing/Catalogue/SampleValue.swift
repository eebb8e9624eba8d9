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
        case (.quantity(let canonical, let conversions, let range), .number(let number)):
            guard number.isFinite else { throw SampleRejection("value must be a finite number") }
            let converted: Double
            if unit == nil || unit == canonical {
                converted = number
            } else if let conversion = conversions.first(where: { $0.unit == unit }) {
                converted = (number + conversion.offset) * conversion.factor
            } else {
                let accepted = ([canonical] + conversions.map(\.unit)).joined(separator: ", ")
                throw SampleRejection("unit \(unit!) does not fit \(rawValue) (use \(accepted))")
            }
            guard range.contains(converted) else {
                throw SampleRejection(
                    "\(rawValue) must be between \(range.lowerBound.formattedValue) and \(range.upperBound.formattedValue) \(canonical)")
            }
            return converted
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
}

extension Double {
    /// `40` rather than `40.0`, `0.5` as is: for messages and the type catalogue.
    var formattedValue: String {
        self == rounded() && abs(self) < 1e15 ? String(Int64(self)) : String(self)
    }
}
