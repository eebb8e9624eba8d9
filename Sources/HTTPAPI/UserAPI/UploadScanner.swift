import Foundation
import HealthSharing
import NIOCore

/// Reads an upload body (`{"items":[{…},…]}`) straight from its bytes, one pass, no intermediate
/// JSON tree: the fast path of `POST /api/users/data`, where Foundation's `JSONDecoder` cost
/// 3.3 µs of the 3.8 µs that decoding and validating a sample took (`data4help bench ingest`).
///
/// It handles the common shape only and answers nil for anything else — escape sequences, an
/// item with a duplicate key, deep nesting, or any syntax error — so that the Foundation path
/// (`IngestUploadBody`) decides every unusual case, and the answer never depends on which path
/// ran. A property test checks that both paths agree on what this one accepts.
enum UploadScanner {
    /// What the scanner made of a body.
    enum Scanned {
        case upload(RawUpload)
        /// More than `DataManager.maximumBatchSize` readings: reading stopped there.
        case tooMany
        /// Not of the simple shape this scanner reads.
        case unusual
    }

    /// The items and series, or nil when the body is not of the simple shape this scanner reads
    /// or holds too many readings.
    static func scan(_ buffer: ByteBuffer) -> RawUpload? {
        if case .upload(let upload) = read(buffer) { upload } else { nil }
    }

    static func read(_ buffer: ByteBuffer) -> Scanned {
        buffer.withUnsafeReadableBytes { bytes in
            var scanner = Cursor(bytes: bytes)
            if let upload = scanner.upload() { return .upload(upload) }
            return scanner.readings > DataManager.maximumBatchSize ? .tooMany : .unusual
        }
    }

    private struct Cursor {
        let bytes: UnsafeRawBufferPointer
        var index = 0
        /// Items and series values read so far: past the batch limit the scanner stops, instead
        /// of building a million items from a body of `{}`s.
        var readings = 0

        /// Counts one more reading; false once past the limit.
        mutating func countReading() -> Bool {
            readings += 1
            return readings <= DataManager.maximumBatchSize
        }

        init(bytes: UnsafeRawBufferPointer) {
            self.bytes = bytes
        }

        mutating func upload() -> RawUpload? {
            skipSpace()
            guard consume(UInt8(ascii: "{")) else { return nil }
            var items: [RawIngestItem]?
            var series: [RawSeries]?
            skipSpace()
            if !consume(UInt8(ascii: "}")) {
                repeat {
                    skipSpace()
                    guard let range = rawString() else { return nil }
                    let key = bytes[range]
                    skipSpace()
                    guard consume(UInt8(ascii: ":")) else { return nil }
                    skipSpace()
                    if key.elementsEqual("items".utf8) {
                        guard items == nil, let parsed = itemList() else { return nil }
                        items = parsed
                    } else if key.elementsEqual("series".utf8) {
                        guard series == nil, let parsed = seriesList() else { return nil }
                        series = parsed
                    } else {
                        guard skipValue(depth: 0) else { return nil }
                    }
                    skipSpace()
                } while consume(UInt8(ascii: ","))
                guard consume(UInt8(ascii: "}")) else { return nil }
            }
            skipSpace()
            guard index == bytes.count, items != nil || series != nil else { return nil }
            return RawUpload(items: items ?? [], series: series ?? [], hasSeries: series != nil)
        }

        /// The series of the usual shape: objects whose fields have their JSON types (or null),
        /// values that are numbers or null. Anything else goes to Foundation, which decides how
        /// the series is refused.
        private mutating func seriesList() -> [RawSeries]? {
            guard consume(UInt8(ascii: "[")) else { return nil }
            var list: [RawSeries] = []
            skipSpace()
            if consume(UInt8(ascii: "]")) { return list }
            repeat {
                skipSpace()
                guard let series = oneSeries() else { return nil }
                if series.values?.isEmpty ?? true { guard countReading() else { return nil } }
                list.append(series)
                skipSpace()
            } while consume(UInt8(ascii: ","))
            guard consume(UInt8(ascii: "]")) else { return nil }
            return list
        }

        private mutating func oneSeries() -> RawSeries? {
            guard consume(UInt8(ascii: "{")) else { return nil }
            var raw = RawSeries()
            var seen: Set<String> = []
            skipSpace()
            if consume(UInt8(ascii: "}")) { return raw }
            repeat {
                skipSpace()
                guard let key = rawString().map(text) else { return nil }
                skipSpace()
                guard consume(UInt8(ascii: ":")) else { return nil }
                skipSpace()
                let known = ["type", "unit", "start", "source", "intervalMs", "values"].contains(key)
                if known {
                    guard seen.insert(key).inserted else { return nil }  // duplicate key: let Foundation decide
                    if peek() == UInt8(ascii: "n") {
                        guard literal("null") else { return nil }
                    } else if key == "intervalMs" {
                        guard let number = number(), number.isFinite else { return nil }
                        raw.intervalMs = number
                    } else if key == "values" {
                        guard let values = valueArray() else { return nil }
                        raw.values = values
                    } else if key == "start" {
                        guard peek() == UInt8(ascii: "\""), let instant = rawString().map(instant) else { return nil }
                        raw.start = instant
                    } else {
                        guard peek() == UInt8(ascii: "\""), let text = rawString().map(text) else { return nil }
                        switch key {
                        case "type": raw.type = text
                        case "unit": raw.unit = text
                        default: raw.source = text
                        }
                    }
                } else {
                    guard skipValue(depth: 0) else { return nil }
                }
                skipSpace()
            } while consume(UInt8(ascii: ","))
            guard consume(UInt8(ascii: "}")) else { return nil }
            return raw
        }

        /// `[72, 73.5, null, …]`: finite numbers and nulls only.
        private mutating func valueArray() -> [Double?]? {
            guard consume(UInt8(ascii: "[")) else { return nil }
            var values: [Double?] = []
            // A value takes at least two bytes (`7,`).
            values.reserveCapacity(min((bytes.count - index) / 2, DataManager.maximumBatchSize + 1))
            skipSpace()
            if consume(UInt8(ascii: "]")) { return values }
            repeat {
                skipSpace()
                guard countReading() else { return nil }
                if peek() == UInt8(ascii: "n") {
                    guard literal("null") else { return nil }
                    values.append(nil)
                } else {
                    guard let number = number(), number.isFinite else { return nil }
                    values.append(number)
                }
                skipSpace()
            } while consume(UInt8(ascii: ","))
            guard consume(UInt8(ascii: "]")) else { return nil }
            return values
        }

        private mutating func itemList() -> [RawIngestItem]? {
            guard consume(UInt8(ascii: "[")) else { return nil }
            var items: [RawIngestItem] = []
            // An item takes at least 60 bytes in practice: growing the array from empty copied
            // every item (about 200 bytes each) ten times over for an upload of 1,000.
            items.reserveCapacity(min(bytes.count / 64, DataManager.maximumBatchSize + 1))
            skipSpace()
            if consume(UInt8(ascii: "]")) { return items }
            repeat {
                skipSpace()
                guard countReading() else { return nil }
                // Read into its place in the array: an item returned and appended was copied
                // and destroyed on the way (about 200 bytes; 12 % of decoding an upload).
                items.append(RawIngestItem())
                guard item(into: &items[items.count - 1]) else { return nil }
                skipSpace()
            } while consume(UInt8(ascii: ","))
            guard consume(UInt8(ascii: "]")) else { return nil }
            return items
        }

        /// One item into `raw` (empty), with the lenient decoder's semantics: a field of the wrong
        /// JSON type leaves the field empty and records the first such problem in the decoder's
        /// field order. False when the body is not of the shape this scanner reads.
        private mutating func item(into raw: inout RawIngestItem) -> Bool {
            guard peek() == UInt8(ascii: "{") else {
                guard skipValue(depth: 0) else { return false }
                raw.fieldError = "item must be a JSON object"
                return true
            }
            index += 1
            var seen: UInt32 = 0
            var problems: [Field: String] = [:]
            skipSpace()
            if consume(UInt8(ascii: "}")) { return true }
            repeat {
                skipSpace()
                guard let range = rawString() else { return false }
                let key = bytes[range]
                skipSpace()
                guard consume(UInt8(ascii: ":")) else { return false }
                skipSpace()
                let field = Field(key)
                if let field {
                    guard seen & field.bit == 0 else { return false }  // duplicate key: let Foundation decide
                    seen |= field.bit
                    guard read(field, into: &raw, problems: &problems) else { return false }
                } else {
                    guard skipValue(depth: 0) else { return false }
                }
                skipSpace()
            } while consume(UInt8(ascii: ","))
            guard consume(UInt8(ascii: "}")) else { return false }
            if !problems.isEmpty { raw.fieldError = Field.decoderOrder.lazy.compactMap { problems[$0] }.first }
            return true
        }

        private mutating func read(_ field: Field, into raw: inout RawIngestItem, problems: inout [Field: String]) -> Bool {
            let byte = peek()
            if byte == UInt8(ascii: "n") { return literal("null") }
            switch field.kind {
            case .string:
                guard byte == UInt8(ascii: "\"") else {
                    guard skipValue(depth: 0) else { return false }
                    problems[field] = field.typeProblem
                    return true
                }
                switch field {
                case .start, .end, .time:
                    guard let instant = rawString().map(instant) else { return false }
                    switch field {
                    case .start: raw.start = instant
                    case .end: raw.end = instant
                    default: raw.time = instant
                    }
                case .type:
                    guard let range = rawString() else { return false }
                    if let known = Self.sampleType(bytes[range]) {
                        raw.type = .known(known)
                    } else {
                        raw.type = .unknown(text(range))
                    }
                default:
                    guard let text = rawString().map(text) else { return false }
                    switch field {
                    case .id: raw.id = text
                    case .unit: raw.unit = text
                    default: raw.source = text
                    }
                }
            case .number:
                guard let byte, byte == UInt8(ascii: "-") || (byte >= 0x30 && byte <= 0x39) else {
                    guard skipValue(depth: 0) else { return false }
                    problems[field] = field.typeProblem
                    return true
                }
                guard let number = number() else { return false }
                guard number.isFinite else {
                    problems[field] = field.typeProblem
                    return true
                }
                switch field {
                case .latitude: raw.latitude = number
                case .longitude: raw.longitude = number
                case .accuracy: raw.accuracy = number
                default: raw.altitude = number
                }
            case .value:
                if byte == UInt8(ascii: "\"") {
                    guard let text = rawString().map(text) else { return false }
                    raw.value = .word(text)
                } else if let byte, byte == UInt8(ascii: "-") || (byte >= 0x30 && byte <= 0x39) {
                    guard let number = number() else { return false }
                    if number.isFinite { raw.value = .number(number) } else { problems[field] = field.typeProblem }
                } else {
                    guard skipValue(depth: 0) else { return false }
                    problems[field] = field.typeProblem
                }
            }
            return true
        }

        // MARK: Lexing

        private func peek() -> UInt8? {
            index < bytes.count ? bytes[index] : nil
        }

        private mutating func consume(_ byte: UInt8) -> Bool {
            guard peek() == byte else { return false }
            index += 1
            return true
        }

        private mutating func skipSpace() {
            while let byte = peek(), byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
        }

        private mutating func literal(_ word: StaticString) -> Bool {
            let length = word.utf8CodeUnitCount
            guard index + length <= bytes.count else { return false }
            for offset in 0..<length where bytes[index + offset] != word.utf8Start[offset] { return false }
            index += length
            return true
        }

        /// A string's bytes as text (`rawString` has checked that they are UTF-8).
        private func text(_ range: Range<Int>) -> String {
            String(decoding: bytes[range], as: UTF8.self)
        }

        /// The sample type a name's bytes spell, compared with each type's name (lengths first),
        /// no string made; nil for any other name.
        private static func sampleType(_ name: UnsafeRawBufferPointer.SubSequence) -> SampleType? {
            SampleType.allCases.first { type in
                var rawValue = type.rawValue
                return rawValue.withUTF8 { candidate in
                    guard candidate.count == name.count, let start = candidate.baseAddress, let base = name.base.baseAddress else { return false }
                    return memcmp(start, base + name.startIndex, name.count) == 0
                }
            }
        }

        /// A time field read from its bytes, no string made.
        private func instant(_ range: Range<Int>) -> RawInstant {
            RawInstant(utf8: UnsafeRawBufferPointer(rebasing: bytes[range]))
        }

        /// Where a string's bytes are, between its quotes (positions, not a slice: returned from
        /// every string read, a slice's four words went through memory); nil for an escape, a
        /// control character, bytes that are not UTF-8 or no closing quote. Eight bytes at a
        /// time: the first quote, backslash or control character of a word is found from its
        /// bits (a byte-by-byte loop was 11 % of decoding an upload), and the bytes before it are
        /// or-ed together, so their top bit says whether any was not ASCII. The last few bytes of
        /// a body, fewer than eight, are read one by one.
        private mutating func rawString() -> Range<Int>? {
            guard consume(UInt8(ascii: "\"")) else { return nil }
            let start = index
            var seen: UInt64 = 0
            while bytes.count - index >= 8 {
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                let special = Self.quotesBackslashesAndControls(word)
                guard special != 0 else {
                    seen |= word
                    index += 8
                    continue
                }
                // The lowest flag is exact (see `quotesBackslashesAndControls`); little-endian,
                // so it is the first such byte.
                let offset = special.trailingZeroBitCount / 8
                seen |= word & ((1 &<< UInt64(offset * 8)) &- 1)
                index += offset
                return finish(from: start, seen: seen)
            }
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { return finish(from: start, seen: seen) }
                seen |= UInt64(byte)
                index += 1
            }
            return nil
        }

        /// The string from `start` when the byte at `index` is its closing quote (nil when it is a
        /// backslash or a control character), past that quote.
        @inline(__always)
        private mutating func finish(from start: Int, seen: UInt64) -> Range<Int>? {
            guard bytes[index] == UInt8(ascii: "\"") else { return nil }
            index += 1
            let range = start..<(index - 1)
            // Bytes beyond ASCII must be UTF-8, in every string (a key skipped as unknown too):
            // Foundation refuses a body that is not, and the scanner must not read one it refuses.
            // ASCII, the usual case, is valid as it is; the standard library's validation is
            // generic and looked up its type metadata at run time on every call (0.9 % of a
            // `bench ingest` profile).
            guard seen & 0x8080_8080_8080_8080 == 0 || String(validating: bytes[range], as: UTF8.self) != nil else { return nil }
            return range
        }

        /// The top bit of each byte of `word` that is `"`, `\` or below 0x20 set, and possibly
        /// of bytes above the first such byte, never below it. `(x − 0x01…) & ~x & 0x80…` flags
        /// the bytes of x that are zero — subtracting one borrows into a byte's top bit while its
        /// own top bit is clear — and, past the first, perhaps others, as the borrow runs on;
        /// with 0x20… instead of 0x01… the bytes below 0x20; a byte equal to `c` is a zero byte
        /// of `x ^ c…`.
        @inline(__always)
        private static func quotesBackslashesAndControls(_ word: UInt64) -> UInt64 {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let quotes = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
            let backslashes = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
            let zeroQuote = (quotes &- ones) & ~quotes
            let zeroBackslash = (backslashes &- ones) & ~backslashes
            let control = (word &- ones &* 0x20) & ~word
            return (zeroQuote | zeroBackslash | control) & 0x8080_8080_8080_8080
        }

        /// A number in strict JSON grammar.
        ///
        /// The usual readings (`72`, `36.6`, `0.97`: at most 15 digits, no exponent) are computed
        /// from their digits: the digits as an integer are exact in a `Double` (below 2⁵³), and so
        /// is the power of ten that divides them (at most 10¹⁵), so the one division rounds
        /// correctly and gives the same `Double` as parsing the text would (Clinger's fast path).
        /// The rest is parsed from its text.
        private mutating func number() -> Double? {
            let start = index
            let negative = consume(UInt8(ascii: "-"))
            guard let first = peek(), first >= 0x30, first <= 0x39 else { return nil }
            index += 1
            var mantissa = Int64(first &- 0x30)
            var digits = 1
            if first != 0x30 { skipDigits(into: &mantissa, counting: &digits) }
            var decimals = 0
            if consume(UInt8(ascii: ".")) {
                guard let digit = peek(), digit >= 0x30, digit <= 0x39 else { return nil }
                let before = digits
                skipDigits(into: &mantissa, counting: &digits)
                decimals = digits - before
            }
            if let exponent = peek(), exponent == UInt8(ascii: "e") || exponent == UInt8(ascii: "E") {
                index += 1
                if let sign = peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { index += 1 }
                guard let digit = peek(), digit >= 0x30, digit <= 0x39 else { return nil }
                skipDigits()
                digits = Int.max  // the text decides
            }
            guard digits <= 15 else {
                // A number read as zero or as a subnormal goes to Foundation, whose decoder
                // refuses some of them as "not representable" (`0e3` and `1e-400`, while `0e+3`
                // and `-0e3` are zeros; found by the upload fuzzer's comparison of the two
                // paths): both paths then give the same answer.
                guard let value = Double(String(decoding: bytes[start..<index], as: UTF8.self)), !value.isZero, !value.isSubnormal else {
                    return nil
                }
                return value
            }
            // 10^decimals, exact: every power of ten up to 10²² is a `Double`, and so each product
            // here (a table in a static cost a `swift_once` call per number).
            var power = 1.0
            for _ in 0..<decimals { power *= 10 }
            let magnitude = Double(mantissa) / power
            return negative ? -magnitude : magnitude
        }

        private mutating func skipDigits() {
            while let byte = peek(), byte >= 0x30, byte <= 0x39 { index += 1 }
        }

        /// Skips digits, adding the first 15 of the number to `mantissa` (beyond 15 only counted:
        /// the caller then parses the text).
        private mutating func skipDigits(into mantissa: inout Int64, counting digits: inout Int) {
            while let byte = peek(), byte >= 0x30, byte <= 0x39 {
                if digits < 15 { mantissa = mantissa &* 10 &+ Int64(byte &- 0x30) }
                digits += 1
                index += 1
            }
        }

        /// Skips any JSON value; false on a syntax error or nesting deeper than 32.
        private mutating func skipValue(depth: Int) -> Bool {
            guard depth < 32, let byte = peek() else { return false }
            switch byte {
            case UInt8(ascii: "\""):
                return rawString() != nil
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let close = byte == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
                index += 1
                skipSpace()
                if consume(close) { return true }
                repeat {
                    skipSpace()
                    if close == UInt8(ascii: "}") {
                        guard rawString() != nil else { return false }
                        skipSpace()
                        guard consume(UInt8(ascii: ":")) else { return false }
                        skipSpace()
                    }
                    guard skipValue(depth: depth + 1) else { return false }
                    skipSpace()
                } while consume(UInt8(ascii: ","))
                return consume(close)
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            default: return number() != nil
            }
        }
    }

    /// The fields of an item, in the order the Foundation path reads them (which decides which
    /// problem is reported when several fields have the wrong type).
    private enum Field: Int, CaseIterable {
        case id, type, unit, start, end, source, latitude, longitude, accuracy, altitude, time, value

        enum Kind { case string, number, value }

        static let decoderOrder: [Field] = allCases

        /// The field a key names, told by its length and then one to three comparisons of its
        /// bytes as one word (a byte-by-byte comparison of names was 10 % of decoding an upload,
        /// `memcmp` as much, the generic `elementsEqual` over a table of names 8 %).
        init?(_ key: UnsafeRawBufferPointer.SubSequence) {
            guard (2...9).contains(key.count) else { return nil }
            let word = Self.word(key)
            let field: Field? =
                switch key.count {
                case 2: word == Self.pack("id") ? .id : nil
                case 3: word == Self.pack("end") ? .end : nil
                case 4: word == Self.pack("type") ? .type : word == Self.pack("time") ? .time : word == Self.pack("unit") ? .unit : nil
                case 5: word == Self.pack("start") ? .start : word == Self.pack("value") ? .value : nil
                case 6: word == Self.pack("source") ? .source : nil
                case 8:
                    word == Self.pack("latitude")
                        ? .latitude : word == Self.pack("accuracy") ? .accuracy : word == Self.pack("altitude") ? .altitude : nil
                case 9: word == Self.pack("longitud") && key.last == UInt8(ascii: "e") ? .longitude : nil
                default: nil
                }
            guard let field else { return nil }
            self = field
        }

        /// The first eight bytes of `key` (fewer: zeros after them) as a little-endian word. One
        /// load when the body holds eight bytes from the key's start (a key is followed by at
        /// least `":0}]}`), else byte by byte.
        @inline(__always)
        private static func word(_ key: UnsafeRawBufferPointer.SubSequence) -> UInt64 {
            let length = min(key.count, 8)
            guard key.base.count - key.startIndex >= 8 else {
                var word: UInt64 = 0
                for offset in 0..<length { word |= UInt64(key[key.startIndex &+ offset]) &<< UInt64(offset &* 8) }
                return word
            }
            let word = UInt64(littleEndian: key.base.loadUnaligned(fromByteOffset: key.startIndex, as: UInt64.self))
            return length == 8 ? word : word & ((1 &<< UInt64(length &* 8)) &- 1)
        }

        /// A name's first eight bytes as `word(_:)` reads a key (folded to a constant where inlined).
        @inline(__always)
        static func pack(_ name: StaticString) -> UInt64 {
            var word: UInt64 = 0
            for offset in 0..<min(name.utf8CodeUnitCount, 8) { word |= UInt64(name.utf8Start[offset]) &<< UInt64(offset &* 8) }
            return word
        }

        var bit: UInt32 { 1 << UInt32(rawValue) }

        var name: StaticString {
            switch self {
            case .id: "id"
            case .type: "type"
            case .unit: "unit"
            case .start: "start"
            case .end: "end"
            case .source: "source"
            case .latitude: "latitude"
            case .longitude: "longitude"
            case .accuracy: "accuracy"
            case .altitude: "altitude"
            case .time: "time"
            case .value: "value"
            }
        }

        var kind: Kind {
            switch self {
            case .latitude, .longitude, .accuracy, .altitude: .number
            case .value: .value
            default: .string
            }
        }

        var typeProblem: String {
            switch kind {
            case .string: "\(name) must be \(self == .start || self == .end || self == .time ? "an RFC 3339 time string" : "a string")"
            case .number: "\(name) must be a number"
            case .value: "value must be a number (or a word for sleep)"
            }
        }
    }
}
