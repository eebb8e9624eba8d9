import Foundation

/// JSON as the API speaks it: camelCase keys as declared, RFC 3339 timestamps in UTC. The one
/// encoder of every body the server sends — responses, stream events and webhook bodies alike.
package enum WireFormat {
    /// An instant with millisecond precision, `2026-11-21T08:30:00.250Z`: samples keep their milliseconds.
    /// The instant is rounded to the nearest millisecond first: a time stored as epoch
    /// milliseconds and turned into a `Date` (a binary fraction) is a hair below its millisecond
    /// about half the time, and Foundation's formatter truncates — it wrote `…00.000Z` for a
    /// sample taken at `…00.001Z`.
    package static func timestamp(_ date: Date) -> String {
        guard let milliseconds = Int64(exactly: (date.timeIntervalSince1970 * 1000).rounded()),
            (firstTimestampMilliseconds..<endTimestampMilliseconds).contains(milliseconds)
        else {
            return date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
        }
        return timestamp(milliseconds: milliseconds)
    }

    /// 0000-01-01T00:00:00Z and 10000-01-01T00:00:00Z in milliseconds: the years written with four digits.
    package static let firstTimestampMilliseconds: Int64 = -62_167_219_200_000
    package static let endTimestampMilliseconds: Int64 = 253_402_300_800_000

    /// `timestamp(_:)` of an instant given as epoch milliseconds (years 0000 to 9999), exactly.
    package static func timestamp(milliseconds: Int64) -> String {
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let (date, secondOfDay) = CivilDate.split(unixSeconds: Int(truncatingIfNeeded: seconds))
        let millis = Int(truncatingIfNeeded: milliseconds - seconds * 1000)
        func digits(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(digits(date.year, 4))-\(digits(date.month, 2))-\(digits(date.day, 2))T\(digits(secondOfDay / 3600, 2)):"
            + "\(digits(secondOfDay / 60 % 60, 2)):\(digits(secondOfDay % 60, 2)).\(digits(millis, 3))Z"
    }

    package static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    package static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}

extension UUID {
    /// Ids on the wire are lower-case UUIDs (RFC 9562 §4 recommends lower case for output).
    package var wireString: String { uuidString.lowercased() }
}
