import HealthSharing
import NIOCore

/// How many readings an upload body holds — its `items`, and its series' values (a series
/// without values counts one) — found by walking its JSON without building anything, before
/// Foundation's decoder sees a body the byte scanner declined. A 4 MiB body of empty items
/// (`{},{},…`: 1.4 million of them) took 550 MB and 1.4 s to decode into items, and 620 MB and
/// 5 s through Foundation's tree; this walk allocates nothing, so such a body is refused with a
/// 413 for the cost of reading it once.
///
/// Keys are compared after their escapes are decoded (`"\u0069tems"` is `items` to Foundation
/// too), every occurrence of a repeated key is counted (an upper bound whichever one a decoder
/// keeps), and a body this walk cannot follow is nil: the caller answers it as malformed
/// without handing it to a decoder that would build the tree up to the error first. Numbers are
/// skipped as leniently as Foundation reads them; a property test checks that nothing Foundation
/// decodes is counted short or refused here.
enum UploadReadingCount {
    /// Nesting deeper than this is refused as malformed (an upload is three levels deep).
    static let maximumDepth = 64

    /// The readings in `buffer`, or nil when it is not JSON (or nests deeper than `maximumDepth`).
    /// A body that is not an object holds none.
    static func count(_ buffer: ByteBuffer) -> Int? {
        buffer.withUnsafeReadableBytes { bytes in
            var walker = Walker(bytes: bytes)
            walker.space()
            let readings: Int?
            if walker.peek() == UInt8(ascii: "{") {
                readings = walker.upload()
            } else {
                readings = walker.skip(depth: 0) ? 0 : nil
            }
            walker.space()
            guard let readings, walker.index == bytes.count else { return nil }
            return readings
        }
    }

    private struct Walker {
        let bytes: UnsafeRawBufferPointer
        var index = 0

        func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func consume(_ byte: UInt8) -> Bool {
            guard peek() == byte else { return false }
            index += 1
            return true
        }

        mutating func space() {
            while let byte = peek(), byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
        }

        /// The top-level object: the elements of every `items`, and of every series' `values`.
        mutating func upload() -> Int? {
            var readings = 0
            let counted = members(depth: 0) { walker, key in
                switch key {
                case "items": return walker.elements(depth: 1) { walker, depth in walker.skip(depth: depth) ? 1 : nil }
                case "series": return walker.elements(depth: 1) { walker, depth in walker.series(depth: depth) }
                default: return walker.skip(depth: 1) ? 0 : nil
                }
            } add: {
                readings = readings.addingReportingOverflow($0).partialValue
            }
            return counted ? readings : nil
        }

        /// One series: the elements of its `values` (at least one, as `RawSeries.positions`).
        mutating func series(depth: Int) -> Int? {
            guard peek() == UInt8(ascii: "{") else { return skip(depth: depth) ? 1 : nil }
            var values = 0
            let counted = members(depth: depth) { walker, key in
                key == "values" && walker.peek() == UInt8(ascii: "[")
                    ? walker.elements(depth: depth + 1) { walker, depth in walker.skip(depth: depth) ? 1 : nil }
                    : (walker.skip(depth: depth + 1) ? 0 : nil)
            } add: {
                values += $0
            }
            return counted ? max(values, 1) : nil
        }

        /// An object's members, each value read by `member` (given the decoded key), which answers
        /// its readings (nil: not JSON) for `add`.
        mutating func members(
            depth: Int, _ member: (inout Walker, String) -> Int?, add: (Int) -> Void
        ) -> Bool {
            guard depth < maximumDepth, consume(UInt8(ascii: "{")) else { return false }
            space()
            if consume(UInt8(ascii: "}")) { return true }
            repeat {
                space()
                guard let key = string() else { return false }
                space()
                guard consume(UInt8(ascii: ":")) else { return false }
                space()
                guard let readings = member(&self, key) else { return false }
                add(readings)
                space()
            } while consume(UInt8(ascii: ","))
            return consume(UInt8(ascii: "}"))
        }

        /// An array's elements, each read by `element`; the sum of what they answer (nil: not an
        /// array, or not JSON).
        mutating func elements(depth: Int, _ element: (inout Walker, Int) -> Int?) -> Int? {
            guard peek() == UInt8(ascii: "[") else { return skip(depth: depth) ? 0 : nil }
            guard depth < maximumDepth else { return nil }
            index += 1
            space()
            if consume(UInt8(ascii: "]")) { return 0 }
            var sum = 0
            repeat {
                space()
                guard let readings = element(&self, depth + 1) else { return nil }
                sum = sum.addingReportingOverflow(readings).partialValue
                space()
            } while consume(UInt8(ascii: ","))
            return consume(UInt8(ascii: "]")) ? sum : nil
        }

        /// Skips any JSON value.
        mutating func skip(depth: Int) -> Bool {
            guard depth < maximumDepth, let byte = peek() else { return false }
            switch byte {
            case UInt8(ascii: "\""): return skipString()
            case UInt8(ascii: "{"):
                return members(depth: depth) { walker, _ in
                    walker.skip(depth: depth + 1) ? 0 : nil
                } add: { _ in
                }
            case UInt8(ascii: "["): return elements(depth: depth) { walker, depth in walker.skip(depth: depth) ? 0 : nil } != nil
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            default: return number()
            }
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let length = word.utf8CodeUnitCount
            guard index + length <= bytes.count else { return false }
            for offset in 0..<length where bytes[index + offset] != word.utf8Start[offset] { return false }
            index += length
            return true
        }

        /// A number, skipped leniently: the characters a number is written with (Foundation's
        /// decoder takes `1.` and `01`, so only it decides what such a number is).
        mutating func number() -> Bool {
            let start = index
            while let byte = peek(),
                isDigit(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: ".")
                    || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
            {
                index += 1
            }
            return index > start
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

        /// A string skipped: escapes checked, no control characters.
        mutating func skipString() -> Bool {
            guard consume(UInt8(ascii: "\"")) else { return false }
            while let byte = peek() {
                index += 1
                switch byte {
                case UInt8(ascii: "\""): return true
                case UInt8(ascii: "\\"): guard escape(into: nil) else { return false }
                case ..<0x20: return false
                default: continue
                }
            }
            return false
        }

        /// A key, its escapes decoded (nil: not a JSON string). Keys are short; a long one is read
        /// whole all the same, once.
        mutating func string() -> String? {
            guard consume(UInt8(ascii: "\"")) else { return nil }
            var scalars = String.UnicodeScalarView()
            var pendingHigh: UInt32?
            while let byte = peek() {
                index += 1
                switch byte {
                case UInt8(ascii: "\""): return String(scalars)
                case UInt8(ascii: "\\"):
                    var unit: UInt32 = 0
                    guard escape(into: &unit) else { return nil }
                    if (0xD800...0xDBFF).contains(unit) {
                        pendingHigh = unit
                        continue
                    }
                    if let high = pendingHigh, (0xDC00...0xDFFF).contains(unit) {
                        unit = 0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00)
                    }
                    pendingHigh = nil
                    scalars.append(Unicode.Scalar(unit) ?? "\u{FFFD}")
                case ..<0x20: return nil
                default:
                    pendingHigh = nil
                    // The key's other bytes as UTF-8 (the names we look for are ASCII: any
                    // other byte only has to make the key differ from them).
                    scalars.append(Unicode.Scalar(byte))
                }
            }
            return nil
        }

        /// An escape after its backslash; its code unit into `unit` when asked.
        mutating func escape(into unit: UnsafeMutablePointer<UInt32>?) -> Bool {
            guard let byte = peek() else { return false }
            index += 1
            let value: UInt32
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): value = UInt32(truncatingIfNeeded: byte)
            case UInt8(ascii: "b"): value = 0x08
            case UInt8(ascii: "f"): value = 0x0C
            case UInt8(ascii: "n"): value = 0x0A
            case UInt8(ascii: "r"): value = 0x0D
            case UInt8(ascii: "t"): value = 0x09
            case UInt8(ascii: "u"):
                guard index + 4 <= bytes.count else { return false }
                var code: UInt32 = 0
                for _ in 0..<4 {
                    // Widened first: the subtractions below stay within each case's range.
                    let digit = UInt32(truncatingIfNeeded: bytes[index])
                    index += 1
                    switch digit {
                    case 0x30...0x39: code = code << 4 | (digit - 0x30)
                    case 0x41...0x46: code = code << 4 | (digit - 0x41 + 10)
                    case 0x61...0x66: code = code << 4 | (digit - 0x61 + 10)
                    default: return false
                    }
                }
                value = code
            default: return false
            }
            unit?.pointee = value
            return true
        }
    }
}
