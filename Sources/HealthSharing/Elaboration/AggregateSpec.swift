import AccessManager
import Crypto
import Foundation

/// What a group query may ask for.
package enum AggregateStatistic: String, Sendable, CaseIterable {
    /// Individuals with data of the type in the window.
    case count
    /// The mean of the individuals' own means over the window.
    case mean
    /// The sum of the individuals' own means over the window.
    case sum
    /// How many individuals' means fall in each of the type's fixed bins.
    case histogram
    /// Quartiles and the 10th and 90th percentiles, read from the noisy histogram.
    case quantiles
}

/// The public dimensions a query may group by.
package enum AggregateDimension: String, Sendable, CaseIterable {
    case area, ageBand, sex, day, week

    /// Whether one individual may fall in several groups (time groups), which divides ε among them.
    var isTime: Bool { self == .day || self == .week }
}

/// A five-year age band, `"70-74"`; everything from 90 is `"90+"`.
package struct AgeBand: Sendable, Hashable, Comparable {
    /// 0, 5, …, 90.
    package let lower: Int

    package static let all = stride(from: 0, through: 90, by: 5).map(AgeBand.init(lower:))

    init(lower: Int) {
        self.lower = lower
    }

    package init(parsing raw: String) throws(InvalidValue) {
        guard let band = Self.all.first(where: { $0.label == raw }) else {
            throw InvalidValue("must be a five-year band such as 70-74 (0-4 … 85-89, then 90+)")
        }
        self = band
    }

    package var label: String { lower == 90 ? "90+" : "\(lower)-\(lower + 4)" }

    package static func < (a: AgeBand, b: AgeBand) -> Bool { a.lower < b.lower }
}

/// A calendar day, `2026-10-01`.
package struct CalendarDay: Sendable, Hashable, Comparable {
    /// Days since 1970-01-01.
    package let ordinal: Int

    package init(parsing raw: String) throws(InvalidValue) {
        let parts = raw.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            let date = DateComponents(calendar: Self.calendar, timeZone: .gmt, year: year, month: month, day: day).date,
            Self.calendar.dateComponents([.year, .month, .day], from: date) == DateComponents(year: year, month: month, day: day)
        else { throw InvalidValue("must be a date such as 2026-10-01") }
        ordinal = Int((date.timeIntervalSince1970 / 86_400).rounded(.down))
    }

    package init(ordinal: Int) {
        self.ordinal = ordinal
    }

    package init(containing date: Date) {
        ordinal = Int((date.timeIntervalSince1970 / 86_400).rounded(.down))
    }

    package var date: Date { Date(timeIntervalSince1970: Double(ordinal) * 86_400) }

    package var text: String {
        let parts = Self.calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
    }

    package static func < (a: CalendarDay, b: CalendarDay) -> Bool { a.ordinal < b.ordinal }

    private var components: DateComponents { Self.calendar.dateComponents([.year, .month, .day], from: date) }
    package var isFirstOfMonth: Bool { components.day == 1 }
    package var isLastOfMonth: Bool { CalendarDay(ordinal: ordinal + 1).isFirstOfMonth }
    package var firstOfMonth: CalendarDay { CalendarDay(ordinal: ordinal - components.day! + 1) }
    package var firstOfNextMonth: CalendarDay {
        let next = Self.calendar.date(byAdding: .month, value: 1, to: firstOfMonth.date)!
        return CalendarDay(containing: next)
    }

    private static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        return calendar
    }()
}

/// A privacy loss ε in hundredths (0.01 … 1.00): rational, so the noise can be exact.
package struct Epsilon: Sendable, Hashable, Comparable {
    package let hundredths: Int

    package init(hundredths: Int) {
        self.hundredths = hundredths
    }

    package init(parsing value: Double, maximum: Epsilon) throws(InvalidValue) {
        let scaled = (value * 100).rounded()
        // Int(exactly:) answers nil for nan, ±inf and anything out of Int's range: a client's
        // 1e20 is refused here instead of trapping the process.
        guard abs(value * 100 - scaled) < 1e-6, let hundredths = Int(exactly: scaled), (1...maximum.hundredths).contains(hundredths) else {
            throw InvalidValue("must be a multiple of 0.01 from 0.01 to \(maximum.text)")
        }
        self.hundredths = hundredths
    }

    package var value: Double { Double(hundredths) / 100 }
    package var text: String { String(format: "%.2f", value) }

    package static func < (a: Epsilon, b: Epsilon) -> Bool { a.hundredths < b.hundredths }
}

/// A group query, valid and normalised (lists sorted and de-duplicated), so that the same
/// question always has the same `fingerprint`.
package struct AggregateSpec: Sendable, Hashable {
    package static let maximumDays = 365
    package static let maximumGroups = 50
    package static let maximumAreas = 50

    package let type: AggregateSubject
    package let statistic: AggregateStatistic
    package let areas: [String]
    package let ageBands: [AgeBand]
    package let sex: Sex?
    package let from: CalendarDay
    package let to: CalendarDay
    package let groupBy: AggregateDimension?
    package let epsilon: Epsilon

    /// Checks the combination (the fields are valid one by one already): a type with a public
    /// domain, a window of 1–365 days, at most 50 groups. Throws the field at fault.
    package init(
        type: AggregateSubject, statistic: AggregateStatistic, areas: [AreaCode], ageBands: [AgeBand], sex: Sex?,
        from: CalendarDay, to: CalendarDay, groupBy: AggregateDimension?, epsilon: Epsilon
    ) throws(AggregateError) {
        guard AggregateDomain(type) != nil else {
            throw .invalid(field: "type", reason: "has no aggregate domain; use a quantity type such as heartRate")
        }
        guard to >= from else { throw .invalid(field: "to", reason: "must not be before from") }
        guard to.ordinal - from.ordinal + 1 <= Self.maximumDays else { throw .invalid(field: "to", reason: "the window may cover at most 365 days") }
        guard areas.count <= Self.maximumAreas else { throw .invalid(field: "areas", reason: "at most 50 areas") }
        self.type = type
        self.statistic = statistic
        self.areas = Array(Set(areas.map(\.value))).sorted()
        self.ageBands = Array(Set(ageBands)).sorted()
        self.sex = sex
        self.from = from
        self.to = to
        self.groupBy = groupBy
        self.epsilon = epsilon
        if let groupBy, groupCount(groupBy) > Self.maximumGroups {
            throw .invalid(field: "groupBy", reason: "would make more than 50 groups; narrow the filter or the window")
        }
        if groupBy == .area, self.areas.isEmpty {
            throw .invalid(field: "areas", reason: "is required to group by area (the groups are these areas)")
        }
    }

    package var days: Int { to.ordinal - from.ordinal + 1 }

    /// The most groups the answer can have (also how many an individual can appear in, for time groups).
    package func groupCount(_ dimension: AggregateDimension) -> Int {
        switch dimension {
        case .area: areas.count
        case .ageBand: ageBands.isEmpty ? AgeBand.all.count : ageBands.count
        case .sex: sex == nil ? Sex.allCases.count : 1
        case .day: days
        case .week: (to.ordinal - Self.weekStart(from).ordinal) / 7 + 1
        }
    }

    /// How to read the window's totals with the fewest rows: whole months from the monthly
    /// rollups, and for a month the window covers only in part, either its days in the window
    /// (added) or the month's total less its days outside the window (subtracted), whichever is
    /// fewer. A window ending today thus costs no daily rows at its end.
    package func readPlan() -> (months: [CalendarDay], added: [CalendarDay], subtracted: [CalendarDay]) {
        var months: [CalendarDay] = []
        var added: [CalendarDay] = []
        var subtracted: [CalendarDay] = []
        var month = from.firstOfMonth
        while month <= to {
            let next = month.firstOfNextMonth
            let inside = max(month, from).ordinal...min(CalendarDay(ordinal: next.ordinal - 1), to).ordinal
            let outside = (month.ordinal..<next.ordinal).filter { !inside.contains($0) }
            if outside.count < inside.count {
                months.append(month)
                subtracted += outside.map(CalendarDay.init(ordinal:))
            } else {
                added += inside.map(CalendarDay.init(ordinal:))
            }
            month = next
        }
        return (months, added, subtracted)
    }

    /// The window's whole weeks (their Mondays) and the days of its partial weeks: at most two
    /// ranges, each within one week (so that its days' week is known before they are read).
    package func wholeWeeks() -> (weeks: [CalendarDay], edges: [(from: CalendarDay, to: CalendarDay)]) {
        let firstMonday = Self.weekStart(from) == from ? from : CalendarDay(ordinal: Self.weekStart(from).ordinal + 7)
        let lastSunday = CalendarDay(ordinal: Self.weekStart(CalendarDay(ordinal: to.ordinal + 1)).ordinal - 1)
        guard firstMonday < lastSunday else {
            // No whole week: the days of one week, or the ends of two.
            let monday = Self.weekStart(to)
            return ([], from < monday ? [(from, CalendarDay(ordinal: monday.ordinal - 1)), (monday, to)] : [(from, to)])
        }
        let weeks = stride(from: firstMonday.ordinal, to: lastSunday.ordinal, by: 7).map(CalendarDay.init(ordinal:))
        var edges: [(from: CalendarDay, to: CalendarDay)] = []
        if from < firstMonday { edges.append((from, CalendarDay(ordinal: firstMonday.ordinal - 1))) }
        if lastSunday < to { edges.append((CalendarDay(ordinal: lastSunday.ordinal + 1), to)) }
        return (weeks, edges)
    }

    /// The Monday (ISO week start) on or before the day.
    package static func weekStart(_ day: CalendarDay) -> CalendarDay {
        CalendarDay(ordinal: day.ordinal - ((day.ordinal + 3) % 7))  // 1970-01-01 was a Thursday
    }

    /// The spec as canonical JSON (sorted keys, normalised lists): what is stored and shown.
    package var canonicalJSON: String {
        var object: [String: Any] = [
            "type": type.rawValue, "statistic": statistic.rawValue, "from": from.text, "to": to.text,
            "epsilon": epsilon.value, "areas": areas, "ageBands": ageBands.map(\.label),
        ]
        if let sex { object["sex"] = sex.rawValue }
        if let groupBy { object["groupBy"] = groupBy.rawValue }
        // Strings, numbers and arrays of strings only: serialisation cannot fail.
        let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    /// SHA-256 of the canonical JSON: "the same question".
    package var fingerprint: [UInt8] { Array(SHA256.hash(data: Data(canonicalJSON.utf8))) }
}

/// Why a group query cannot be run.
package enum AggregateError: Error, Equatable {
    case invalid(field: String, reason: String)
    /// The party's budget cannot cover ε now; `retryAfter` seconds until enough of it frees up.
    case budgetExhausted(window: String, retryAfter: Int)
    case notFound
}
