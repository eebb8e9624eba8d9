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
                    guard let key = rawString() else { return nil }
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
                guard let keyBytes = rawString(), let key = Self.text(keyBytes) else { return nil }
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
                    } else {
                        guard peek() == UInt8(ascii: "\""), let text = rawString().flatMap(Self.text) else { return nil }
                        switch key {
                        case "type": raw.type = text
                        case "unit": raw.unit = text
                        case "start": raw.start = text
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
                guard countReading(), let item = item() else { return nil }
                items.append(item)
                skipSpace()
            } while consume(UInt8(ascii: ","))
            guard consume(UInt8(ascii: "]")) else { return nil }
            return items
        }

        /// One item, with the lenient decoder's semantics: a field of the wrong JSON type leaves
        /// the field empty and records the first such problem in the decoder's field order.
        private mutating func item() -> RawIngestItem? {
            var raw = RawIngestItem()
            guard peek() == UInt8(ascii: "{") else {
                guard skipValue(depth: 0) else { return nil }
                raw.fieldError = "item must be a JSON object"
                return raw
            }
            index += 1
            var seen: UInt32 = 0
            var problems: [Field: String] = [:]
            skipSpace()
            if consume(UInt8(ascii: "}")) { return raw }
            repeat {
                skipSpace()
                guard let key = rawString() else { return nil }
                skipSpace()
                guard consume(UInt8(ascii: ":")) else { return nil }
                skipSpace()
                let field = Field(key)
                if let field {
                    guard seen & field.bit == 0 else { return nil }  // duplicate key: let Foundation decide
                    seen |= field.bit
                    guard read(field, into: &raw, problems: &problems) else { return nil }
                } else {
                    guard skipValue(depth: 0) else { return nil }
                }
                skipSpace()
            } while consume(UInt8(ascii: ","))
            guard consume(UInt8(ascii: "}")) else { return nil }
            if !problems.isEmpty { raw.fieldError = Field.decoderOrder.lazy.compactMap { problems[$0] }.first }
            return raw
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
                guard let text = rawString().flatMap(Self.text) else { return false }
                switch field {
                case .id: raw.id = text
                case .type: raw.type = text
                case .unit: raw.unit = text
                case .start: raw.start = text
                case .end: raw.end = text
                case .source: raw.source = text
                default: raw.time = text
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
                    guard let text = rawString().flatMap(Self.text) else { return false }
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

        /// A string's bytes as text, nil when they are not UTF-8. ASCII (ids, types, units, times)
        /// is always valid, so it is taken as it is; the standard library's validation is generic
        /// and looked up its type metadata at run time on every call (0.9 % of a `bench ingest`
        /// profile).
        private static func text(_ bytes: UnsafeRawBufferPointer.SubSequence) -> String? {
            bytes.allSatisfy { $0 < 0x80 } ? String(decoding: bytes, as: UTF8.self) : String(validating: bytes, as: UTF8.self)
        }

        /// The bytes of a string without escapes (nil for an escape, a control character or no closing quote).
        private mutating func rawString() -> UnsafeRawBufferPointer.SubSequence? {
            guard consume(UInt8(ascii: "\"")) else { return nil }
            let start = index
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                if byte == UInt8(ascii: "\"") { return bytes[start..<(index - 1)] }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
            }
            return nil
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
            guard digits <= 15 else { return Double(String(decoding: bytes[start..<index], as: UTF8.self)) }
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

        /// The field a key names, told by its first byte and then one or two comparisons of whole
        /// names (the generic `elementsEqual` over a table of names was 8 % of decoding an upload).
        init?(_ key: UnsafeRawBufferPointer.SubSequence) {
            func named(_ field: Field) -> Field? {
                let name = field.name
                guard key.count == name.utf8CodeUnitCount, let base = key.base.baseAddress,
                    memcmp(base + key.startIndex, name.utf8Start, key.count) == 0
                else { return nil }
                return field
            }
            let field: Field? =
                switch key.first {
                case UInt8(ascii: "i"): named(.id)
                case UInt8(ascii: "t"): named(.type) ?? named(.time)
                case UInt8(ascii: "u"): named(.unit)
                case UInt8(ascii: "s"): named(.start) ?? named(.source)
                case UInt8(ascii: "e"): named(.end)
                case UInt8(ascii: "v"): named(.value)
                case UInt8(ascii: "l"): named(.latitude) ?? named(.longitude)
                case UInt8(ascii: "a"): named(.accuracy) ?? named(.altitude)
                default: nil
                }
            guard let field else { return nil }
            self = field
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
