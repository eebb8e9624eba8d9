/// A day of the proleptic Gregorian calendar, and its count of days from 1970-01-01, both ways
/// (Howard Hinnant's `days_from_civil` and `civil_from_days`): timestamps are parsed and written
/// without Foundation's formatters on paths that handle one per sample.
package struct CivilDate: Sendable, Equatable {
    package let year: Int
    /// 1–12.
    package let month: Int
    /// 1–31.
    package let day: Int

    package init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// The day `days` after 1970-01-01 (before it when negative).
    package init(daysSince1970 days: Int) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }

    /// Days from 1970-01-01 to this day.
    package var daysSince1970: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The day and the second of the day of a Unix time (whole seconds; `Int` is 64 bits on
    /// every platform we build for).
    package static func split(unixSeconds: Int) -> (date: CivilDate, secondOfDay: Int) {
        let days = unixSeconds >= 0 ? unixSeconds / 86_400 : (unixSeconds - 86_399) / 86_400
        return (CivilDate(daysSince1970: days), unixSeconds - days * 86_400)
    }
}
