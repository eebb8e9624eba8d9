import Data4HelpCore
import Foundation

/// Parses RFC 3339 timestamps (`2026-11-21T08:30:00.250+01:00`) to millisecond precision.
///
/// The offset is required: a time without one is ambiguous and refused. Written out rather than
/// using `ISO8601FormatStyle` because ingestion parses hundreds of thousands per second.
package enum RFC3339Timestamp {
    package static func parse(_ text: String) -> Date? {
        var utf8 = text.utf8.makeIterator()
        func digits(_ count: Int) -> Int? {
            var value = 0
            for _ in 0..<count {
                guard let byte = utf8.next(), byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        // A test of the next byte, not a set of bytes: a Set literal here was built for every
        // call, 5 % of reading an Apple Health export (perf, bench import).
        func expect(_ allowed: (UInt8) -> Bool) -> Bool {
            guard let byte = utf8.next() else { return false }
            return allowed(byte)
        }
        guard let year = digits(4), expect({ $0 == 45 }), let month = digits(2), expect({ $0 == 45 }), let day = digits(2),
            expect({ $0 == 84 || $0 == 116 || $0 == 32 }), let hour = digits(2), expect({ $0 == 58 }), let minute = digits(2),
            expect({ $0 == 58 }), let second = digits(2)
        else { return nil }
        guard (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
            hour < 24, minute < 60, second < 61
        else { return nil }
        var milliseconds = 0
        var next = utf8.next()
        if next == 46 {  // '.': fraction, any number of digits, kept to milliseconds
            var scale = 100, sawDigit = false
            next = utf8.next()
            while let byte = next, byte >= 48, byte <= 57 {
                milliseconds += Int(byte - 48) * scale
                scale /= 10
                sawDigit = true
                next = utf8.next()
            }
            guard sawDigit else { return nil }
        }
        var offsetSeconds = 0
        switch next {
        case 90, 122:  // 'Z' or 'z'
            break
        case 43, 45:  // '+' or '-'
            guard let offsetHours = digits(2), expect({ $0 == 58 }), let offsetMinutes = digits(2), offsetHours < 24, offsetMinutes < 60 else {
                return nil
            }
            offsetSeconds = (offsetHours * 3600 + offsetMinutes * 60) * (next == 43 ? 1 : -1)
        default:
            return nil
        }
        guard utf8.next() == nil else { return nil }
        let days = CivilDate(year: year, month: month, day: day).daysSince1970
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds) + Double(milliseconds) / 1000)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
