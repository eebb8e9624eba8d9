import Data4HelpCore
import Foundation
import Testing

/// `CivilDate` both ways against Foundation's Gregorian calendar, across four centuries and
/// before 1970 (from 1587: before the 1582 reform Foundation's calendar is Julian, ours stays
/// proleptic Gregorian, as RFC 3339 is).
@Suite struct CivilDateTests {
    @Test func daysRoundTripAndAgreeWithFoundation() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
        for days in stride(from: -140_000, through: 150_000, by: 97) {
            let date = CivilDate(daysSince1970: days)
            #expect(date.daysSince1970 == days)
            let parts = calendar.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: Double(days) * 86_400))
            #expect([date.year, date.month, date.day] == [parts.year, parts.month, parts.day], "day \(days)")
        }
        let (day, second) = CivilDate.split(unixSeconds: -1)
        #expect(day == CivilDate(year: 1969, month: 12, day: 31) && second == 86_399)
    }
}
