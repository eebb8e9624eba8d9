import Foundation

/// JSON as the API speaks it: camelCase keys as declared, RFC 3339 timestamps in UTC. The one
/// encoder of every body the server sends — responses, stream events and webhook bodies alike.
package enum WireFormat {
    /// An instant with millisecond precision, `2026-11-21T08:30:00.250Z`: samples keep their milliseconds.
    package static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
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
