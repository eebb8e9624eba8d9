import Data4HelpCore
import NIOCore

/// JSON written straight into a `ByteBuffer`, for the listings that answer most often (samples,
/// location fixes): Foundation's `JSONEncoder` built a dictionary per item and sorted its keys,
/// 8.4 % of a sample listing's CPU under perf. The output is byte for byte what
/// `WireFormat.encoder()` writes for the same value (`JSONOutputTests` compares them): keys in
/// sorted order, absent optionals left out, `/` not escaped, numbers as Swift's shortest
/// round-trip form without a trailing `.0`.
struct JSONOutput {
    private(set) var buffer: ByteBuffer

    init(capacity: Int = 1024) {
        buffer = ByteBufferAllocator().buffer(capacity: capacity)
    }

    /// Bytes the caller has checked are JSON already: punctuation and escaped key names.
    mutating func raw(_ text: StaticString) {
        buffer.writeStaticString(text)
    }

    mutating func null() {
        buffer.writeStaticString("null")
    }

    /// A string, quoted and escaped as RFC 8259 asks: `"`, `\` and the control characters.
    mutating func string(_ text: String) {
        buffer.writeInteger(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { bytes in
            var plainFrom = 0
            for index in bytes.indices {
                let byte = bytes[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                buffer.writeBytes(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[plainFrom..<index])))
                plainFrom = index + 1
                switch byte {
                case UInt8(ascii: "\""): buffer.writeStaticString(#"\""#)
                case UInt8(ascii: "\\"): buffer.writeStaticString(#"\\"#)
                case 0x0A: buffer.writeStaticString(#"\n"#)
                case 0x0D: buffer.writeStaticString(#"\r"#)
                case 0x09: buffer.writeStaticString(#"\t"#)
                case 0x08: buffer.writeStaticString(#"\b"#)
                case 0x0C: buffer.writeStaticString(#"\f"#)
                default:
                    buffer.writeStaticString(#"\u00"#)
                    buffer.writeInteger(Self.hexDigit(byte >> 4))
                    buffer.writeInteger(Self.hexDigit(byte & 0x0F))
                }
            }
            buffer.writeBytes(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[plainFrom...])))
        }
        buffer.writeInteger(UInt8(ascii: "\""))
    }

    /// A finite number as `JSONEncoder` writes it (`72`, `0.97`, `1e-07`); the values listed here
    /// were checked finite when they were stored. A non-finite one is written as `null` rather
    /// than as invalid JSON.
    mutating func number(_ value: Double) {
        guard value.isFinite else { return null() }
        let text = value.description
        if text.hasSuffix(".0") {
            buffer.writeSubstring(text.dropLast(2))
        } else {
            buffer.writeString(text)
        }
    }

    /// An instant as `WireFormat.timestamp(milliseconds:)` writes it, quoted, without building a
    /// `String`: `"2026-11-21T08:30:00.000Z"`.
    mutating func timestamp(milliseconds: Int64) {
        guard (WireFormat.firstTimestampMilliseconds..<WireFormat.endTimestampMilliseconds).contains(milliseconds) else {
            return string(WireFormat.timestamp(milliseconds: milliseconds))
        }
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let (date, secondOfDay) = CivilDate.split(unixSeconds: Int(truncatingIfNeeded: seconds))
        let millis = Int(truncatingIfNeeded: milliseconds - seconds * 1000)
        buffer.writeInteger(UInt8(ascii: "\""))
        digits(date.year, 4)
        buffer.writeInteger(UInt8(ascii: "-"))
        digits(date.month, 2)
        buffer.writeInteger(UInt8(ascii: "-"))
        digits(date.day, 2)
        buffer.writeInteger(UInt8(ascii: "T"))
        digits(secondOfDay / 3600, 2)
        buffer.writeInteger(UInt8(ascii: ":"))
        digits(secondOfDay / 60 % 60, 2)
        buffer.writeInteger(UInt8(ascii: ":"))
        digits(secondOfDay % 60, 2)
        buffer.writeInteger(UInt8(ascii: "."))
        digits(millis, 3)
        buffer.writeStaticString("Z\"")
    }

    /// `value` (0 ≤ value < 10^width) in exactly `width` decimal digits.
    private mutating func digits(_ value: Int, _ width: Int) {
        var divisor = 1
        for _ in 1..<width { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            buffer.writeInteger(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest / divisor))
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
protocol JSONWritable {
    func write(to output: inout JSONOutput)
}
