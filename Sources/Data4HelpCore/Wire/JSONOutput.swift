/// JSON written straight into bytes, for what the server writes most often: listing pages
/// (samples, location fixes) and log lines. For the listings, Foundation's `JSONEncoder` built a dictionary per item and sorted its keys,
/// 8.4 % of a sample listing's CPU under perf. The output is byte for byte what
/// `WireFormat.encoder()` writes for the same value (`JSONOutputTests` compares them): keys in
/// sorted order, absent optionals left out, `/` not escaped, numbers as Swift's shortest
/// round-trip form without a trailing `.0`.
package struct JSONOutput {
    package private(set) var bytes: [UInt8] = []

    package init(capacity: Int = 1024) {
        bytes.reserveCapacity(capacity)
    }

    /// Bytes the caller has checked are JSON already: punctuation and escaped key names.
    package mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    package mutating func null() {
        raw("null")
    }

    /// A string, quoted and escaped as RFC 8259 asks: `"`, `\` and the control characters.
    package mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var plainFrom = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: utf8[plainFrom..<index])
                plainFrom = index + 1
                switch byte {
                case UInt8(ascii: "\""): raw(#"\""#)
                case UInt8(ascii: "\\"): raw(#"\\"#)
                case 0x0A: raw(#"\n"#)
                case 0x0D: raw(#"\r"#)
                case 0x09: raw(#"\t"#)
                case 0x08: raw(#"\b"#)
                case 0x0C: raw(#"\f"#)
                default:
                    raw(#"\u00"#)
                    bytes.append(Self.hexDigit(byte >> 4))
                    bytes.append(Self.hexDigit(byte & 0x0F))
                }
            }
            bytes.append(contentsOf: utf8[plainFrom...])
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// A finite number as `JSONEncoder` writes it (`72`, `0.97`, `1e-07`); the values listed here
    /// were checked finite when they were stored. A non-finite one is written as `null` rather
    /// than as invalid JSON.
    package mutating func number(_ value: Double) {
        guard value.isFinite else { return null() }
        let text = value.description
        if text.hasSuffix(".0") {
            bytes.append(contentsOf: text.utf8.dropLast(2))
        } else {
            bytes.append(contentsOf: text.utf8)
        }
    }

    /// An instant as `WireFormat.timestamp(milliseconds:)` writes it, quoted, without building a
    /// `String`: `"2026-11-21T08:30:00.000Z"`.
    package mutating func timestamp(milliseconds: Int64) {
        guard (WireFormat.firstTimestampMilliseconds..<WireFormat.endTimestampMilliseconds).contains(milliseconds) else {
            return string(WireFormat.timestamp(milliseconds: milliseconds))
        }
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        instant(seconds: seconds, milliseconds: Int(truncatingIfNeeded: milliseconds - seconds * 1000))
    }

    /// An instant to the second, quoted, as `JSONEncoder`'s `.iso8601` date strategy writes it
    /// (the fraction dropped): `"2026-11-21T08:30:00Z"`. Years 0000 to 9999.
    package mutating func timestamp(seconds: Int64) {
        guard (WireFormat.firstTimestampMilliseconds / 1000..<WireFormat.endTimestampMilliseconds / 1000).contains(seconds) else {
            return null()
        }
        instant(seconds: seconds, milliseconds: nil)
    }

    private mutating func instant(seconds: Int64, milliseconds: Int?) {
        let (date, secondOfDay) = CivilDate.split(unixSeconds: Int(truncatingIfNeeded: seconds))
        bytes.append(UInt8(ascii: "\""))
        digits(date.year, 4)
        bytes.append(UInt8(ascii: "-"))
        digits(date.month, 2)
        bytes.append(UInt8(ascii: "-"))
        digits(date.day, 2)
        bytes.append(UInt8(ascii: "T"))
        digits(secondOfDay / 3600, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(secondOfDay / 60 % 60, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(secondOfDay % 60, 2)
        if let milliseconds {
            bytes.append(UInt8(ascii: "."))
            digits(milliseconds, 3)
        }
        raw("Z\"")
    }

    /// `value` (0 ≤ value < 10^width) in exactly `width` decimal digits.
    private mutating func digits(_ value: Int, _ width: Int) {
        var divisor = 1
        for _ in 1..<width { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}

/// A value that writes itself as JSON, byte for byte as its `Encodable` conformance with
/// `WireFormat.encoder()` would.
package protocol JSONWritable {
    func write(to output: inout JSONOutput)
}
