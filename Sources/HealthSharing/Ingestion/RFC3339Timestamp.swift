import Data4HelpCore
import Foundation

/// Parses RFC 3339 timestamps (`2026-11-21T08:30:00.250+01:00`) to millisecond precision.
///
/// The offset is required: a time without one is ambiguous and refused. Written out rather than
/// using `ISO8601FormatStyle` because ingestion parses hundreds of thousands per second.
package enum RFC3339Timestamp {
    package static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse(utf8: UnsafeRawBufferPointer($0)) }
    }

    /// The parse over UTF-8 bytes (a string's own storage, or a body's), by index: the string's
    /// UTF-8 iterator and a closure per byte were 11 % of decoding and validating an upload
    /// (perf, `bench ingest`).
    package static func parse(utf8 bytes: UnsafeRawBufferPointer) -> Date? {
        var cursor = Cursor(bytes: bytes)
        guard let year = cursor.digits(4), cursor.take(45), let month = cursor.digits(2), cursor.take(45), let day = cursor.digits(2),
            cursor.takeSeparator(), let hour = cursor.digits(2), cursor.take(58), let minute = cursor.digits(2),
            cursor.take(58), let second = cursor.digits(2)
        else { return nil }
        guard (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
            hour < 24, minute < 60, second < 61
        else { return nil }
        var milliseconds = 0
        var next = cursor.next()
        if next == 46 {  // '.': fraction, any number of digits, kept to milliseconds
            var scale = 100, sawDigit = false
            next = cursor.next()
            while let byte = next, byte >= 48, byte <= 57 {
                milliseconds += Int(byte &- 48) * scale
                scale /= 10
                sawDigit = true
                next = cursor.next()
            }
            guard sawDigit else { return nil }
        }
        var offsetSeconds = 0
        switch next {
        case 90, 122:  // 'Z' or 'z'
            break
        case 43, 45:  // '+' or '-'
            guard let offsetHours = cursor.digits(2), cursor.take(58), let offsetMinutes = cursor.digits(2), offsetHours < 24, offsetMinutes < 60
            else { return nil }
            offsetSeconds = (offsetHours * 3600 + offsetMinutes * 60) * (next == 43 ? 1 : -1)
        default:
            return nil
        }
        guard cursor.atEnd else { return nil }
        let days = CivilDate(year: year, month: month, day: day).daysSince1970
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds) + Double(milliseconds) / 1000)
    }

    /// Reads the bytes in order; every read checks the end.
    private struct Cursor {
        let bytes: UnsafeRawBufferPointer
        var index = 0

        var atEnd: Bool { index == bytes.count }

        mutating func next() -> UInt8? {
            guard index < bytes.count else { return nil }
            defer { index += 1 }
            return bytes[index]
        }

        /// `count` decimal digits as a number (at most 4: no overflow).
        mutating func digits(_ count: Int) -> Int? {
            guard bytes.count - index >= count else { return nil }
            var value = 0
            for offset in index..<(index + count) {
                let digit = bytes[offset] &- 48
                guard digit <= 9 else { return nil }
                value = value * 10 + Int(digit)
            }
            index += count
            return value
        }

        mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        /// `T`, `t` or a space between the date and the time.
        mutating func takeSeparator() -> Bool {
            take(84) || take(116) || take(32)
        }
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
