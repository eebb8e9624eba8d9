import Foundation

/// A date of birth, `YYYY-MM-DD`: a real calendar day, not in the future, not before 1900.
package struct BirthDate: Sendable, Hashable {
    /// The canonical `YYYY-MM-DD` text.
    package let value: String

    package init(parsing raw: String, today: Date = Date()) throws(InvalidValue) {
        let invalid = InvalidValue("must be a date written YYYY-MM-DD")
        let parts = raw.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2])
        else { throw invalid }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let components = DateComponents(year: year, month: month, day: day)
        guard let date = calendar.date(from: components),
            calendar.dateComponents([.year, .month, .day], from: date) == components
        else { throw InvalidValue("is not a calendar date") }
        guard year >= 1900 else { throw InvalidValue("must not be before 1900-01-01") }
        guard date <= today else { throw InvalidValue("must not be in the future") }
        self.value = raw
    }
}
