/// One data message of a FIT file: its global number (20 `record`, 18 `session`, …) and the
/// values of the fields it carries, by field number, invalid values (the base type's "no value"
/// pattern) left out. Developer fields are skipped.
package struct FITMessage: Sendable, Equatable {
    package var global: UInt16
    package var fields: [UInt8: FITValue]

    /// An integer field, `nil` when absent, invalid or not an integer.
    package func integer(_ field: UInt8) -> Int64? {
        if case .integer(let value) = fields[field] { return value }
        return nil
    }

    /// A numeric field divided by `scale` less `offset` (the profile's units: `altitude` is
    /// metres × 5 + 500), `nil` when absent or invalid.
    package func number(_ field: UInt8, scale: Double = 1, offset: Double = 0) -> Double? {
        switch fields[field] {
        case .integer(let value): Double(value) / scale - offset
        case .float(let value): value.isFinite ? value / scale - offset : nil
        default: nil
        }
    }

    package func string(_ field: UInt8) -> String? {
        if case .string(let value) = fields[field] { return value }
        return nil
    }
}

/// A field's value as its base type gives it (the first element when the field is an array).
package enum FITValue: Sendable, Equatable {
    case integer(Int64)
    case float(Double)
    case string(String)
}

/// Why a FIT file cannot be read, in words its owner understands.
package struct FITError: Error, Equatable, Sendable {
    package let reason: String
}

/// Decodes the FIT protocol (Garmin's Flexible and Interoperable Data Transfer): file headers of
/// 12 or 14 bytes and their CRC, definition and data messages, compressed timestamp headers,
/// both byte orders, array fields, developer fields (skipped), several FIT files one after the
/// other (chained). It knows no profile: `FITActivityReader` gives the messages their meaning.
///
/// Every length, count and value comes from the file, so none is trusted: reads are bounds
/// checked, arithmetic on decoded numbers does not trap, and a file that does not add up fails
/// with a reason rather than a partial result.
package enum FITDecoder {
    /// Seconds from the Unix epoch to FIT's (1989-12-31T00:00:00Z).
    package static let epochOffset: Int64 = 631_065_600

    /// Calls `handle` with every data message of every FIT file in `bytes`, in file order.
    package static func decode(_ bytes: [UInt8], _ handle: (FITMessage) throws(FITError) -> Void) throws(FITError) {
        guard !bytes.isEmpty else { throw FITError(reason: "is empty") }
        var start = 0
        var files = 0
        while start < bytes.count {
            // Padding after the last chained file is tolerated only as zeros.
            if files > 0, bytes[start...].allSatisfy({ $0 == 0 }) { break }
            start = try decodeFile(bytes, at: start, number: files + 1, handle)
            files += 1
        }
    }

    /// Decodes the FIT file that starts at `start`; answers where the next one would start.
    private static func decodeFile(
        _ bytes: [UInt8], at start: Int, number: Int, _ handle: (FITMessage) throws(FITError) -> Void
    ) throws(FITError) -> Int {
        let which = number == 1 ? "" : " (chained file \(number))"
        guard bytes.count - start >= 12 else { throw FITError(reason: "is too short for a FIT file header\(which)") }
        guard bytes[(start + 8)..<(start + 12)].elementsEqual(Array(".FIT".utf8)) else {
            throw FITError(reason: "is not a FIT file (no \".FIT\" signature)\(which)")
        }
        let headerSize = Int(bytes[start])
        guard headerSize == 12 || headerSize == 14, bytes.count - start >= headerSize else {
            throw FITError(reason: "has a FIT file header of an unknown size (\(headerSize) bytes)\(which)")
        }
        if headerSize == 14 {
            let stored = UInt16(bytes[start + 12]) | UInt16(bytes[start + 13]) << 8
            guard stored == 0 || stored == FITCRC.checksum(bytes[start..<(start + 12)]) else {
                throw FITError(reason: "has a damaged FIT file header (CRC mismatch)\(which)")
            }
        }
        let dataSize = Int(UInt32(bytes[start + 4]) | UInt32(bytes[start + 5]) << 8 | UInt32(bytes[start + 6]) << 16 | UInt32(bytes[start + 7]) << 24)
        let dataStart = start + headerSize
        // The records, then a 2-byte CRC over the header and the records.
        guard dataSize <= bytes.count - dataStart - 2 else {
            throw FITError(
                reason: "is cut off: its header announces \(dataSize) bytes of records, \(max(0, bytes.count - dataStart - 2)) follow\(which)")
        }
        let dataEnd = dataStart + dataSize
        let stored = UInt16(bytes[dataEnd]) | UInt16(bytes[dataEnd + 1]) << 8
        guard stored == FITCRC.checksum(bytes[start..<dataEnd]) else {
            throw FITError(reason: "is damaged: its CRC does not match its contents\(which)")
        }
        var reader = FITRecordReader(bytes: bytes, position: dataStart, end: dataEnd)
        try reader.readAll(handle)
        return dataEnd + 2
    }
}

/// A base type's size and how to read it (FIT SDK, "Base Types").
struct FITBaseType {
    let size: Int
    let kind: Kind

    enum Kind {
        case signed, unsigned, unsignedZ, float, string, bytes
    }

    /// `nil` for base type numbers the protocol does not define.
    init?(_ number: UInt8) {
        switch number & 0x1F {
        case 0x00, 0x02: (size, kind) = (1, .unsigned)  // enum, uint8
        case 0x01: (size, kind) = (1, .signed)
        case 0x03: (size, kind) = (2, .signed)
        case 0x04: (size, kind) = (2, .unsigned)
        case 0x05: (size, kind) = (4, .signed)
        case 0x06: (size, kind) = (4, .unsigned)
        case 0x07: (size, kind) = (1, .string)
        case 0x08: (size, kind) = (4, .float)
        case 0x09: (size, kind) = (8, .float)
        case 0x0A: (size, kind) = (1, .unsignedZ)
        case 0x0B: (size, kind) = (2, .unsignedZ)
        case 0x0C: (size, kind) = (4, .unsignedZ)
        case 0x0D: (size, kind) = (1, .bytes)
        case 0x0E: (size, kind) = (8, .signed)
        case 0x0F: (size, kind) = (8, .unsigned)
        case 0x10: (size, kind) = (8, .unsignedZ)
        default: return nil
        }
    }
}

/// A local message type's layout, from its definition message.
struct FITDefinition {
    struct Field {
        let number: UInt8
        let size: Int
        let type: FITBaseType?
    }

    let global: UInt16
    let bigEndian: Bool
    let fields: [Field]
    /// Bytes of developer fields after the fields, skipped.
    let developerBytes: Int
}

/// Reads the records of one FIT file between `position` and `end`.
struct FITRecordReader {
    let bytes: [UInt8]
    var position: Int
    let end: Int
    private var definitions: [FITDefinition?] = Array(repeating: nil, count: 16)
    /// The last `timestamp` (field 253) seen, FIT seconds: compressed headers count from it.
    private var lastTimestamp: Int64?

    init(bytes: [UInt8], position: Int, end: Int) {
        self.bytes = bytes
        self.position = position
        self.end = end
    }

    mutating func readAll(_ handle: (FITMessage) throws(FITError) -> Void) throws(FITError) {
        while position < end {
            let header = try takeByte("a record header")
            if header & 0x80 != 0 {
                // Compressed timestamp header: a data message of local type 0–3, its time 0–31 s
                // after the last full timestamp (rolling over every 32 s).
                let local = Int((header >> 5) & 0x03)
                guard let last = lastTimestamp else { throw failure("a compressed timestamp comes before any full timestamp") }
                let offset = Int64(header & 0x1F)
                var time = (last & ~0x1F) + offset
                if offset < last & 0x1F { time += 0x20 }
                var message = try readData(local: local)
                message.fields[253] = .integer(time)
                lastTimestamp = time
                try handle(message)
            } else if header & 0x40 != 0 {
                try readDefinition(local: Int(header & 0x0F), developerFields: header & 0x20 != 0)
            } else {
                let message = try readData(local: Int(header & 0x0F))
                // Only a time a uint32 can hold counts (the compressed arithmetic stays in range).
                if let time = message.integer(253), (0...Int64(UInt32.max)).contains(time) { lastTimestamp = time }
                try handle(message)
            }
        }
    }

    private mutating func readDefinition(local: Int, developerFields: Bool) throws(FITError) {
        let fixed = try take(5, "a definition message")
        let bigEndian: Bool
        switch fixed[fixed.startIndex + 1] {
        case 0: bigEndian = false
        case 1: bigEndian = true
        default: throw failure("a definition message names an unknown byte order")
        }
        let low = UInt16(fixed[fixed.startIndex + 2]), high = UInt16(fixed[fixed.startIndex + 3])
        let global = bigEndian ? low << 8 | high : high << 8 | low
        let count = Int(fixed[fixed.startIndex + 4])
        var fields: [FITDefinition.Field] = []
        fields.reserveCapacity(count)
        let layout = try take(count * 3, "a definition message's fields")
        for index in 0..<count {
            let base = layout.startIndex + index * 3
            let size = Int(layout[base + 1])
            guard size > 0 else { throw failure("a field is defined with size 0") }
            fields.append(FITDefinition.Field(number: layout[base], size: size, type: FITBaseType(layout[base + 2])))
        }
        var developerBytes = 0
        if developerFields {
            let developerCount = Int(try takeByte("a developer field count"))
            let developer = try take(developerCount * 3, "a definition message's developer fields")
            for index in 0..<developerCount { developerBytes += Int(developer[developer.startIndex + index * 3 + 1]) }
        }
        definitions[local] = FITDefinition(global: global, bigEndian: bigEndian, fields: fields, developerBytes: developerBytes)
    }

    private mutating func readData(local: Int) throws(FITError) -> FITMessage {
        guard let definition = definitions[local] else {
            throw failure("a data message uses local type \(local), which no definition message defined")
        }
        var message = FITMessage(global: definition.global, fields: [:])
        for field in definition.fields {
            let raw = try take(field.size, "a field of message \(definition.global)")
            if let type = field.type, let value = Self.value(raw, type: type, bigEndian: definition.bigEndian) {
                message.fields[field.number] = value
            }
        }
        _ = try take(definition.developerBytes, "developer fields")
        return message
    }

    /// The value of a field's bytes, `nil` when it holds the base type's invalid value (or is
    /// shorter than one element of its type).
    static func value(_ raw: ArraySlice<UInt8>, type: FITBaseType, bigEndian: Bool) -> FITValue? {
        switch type.kind {
        case .string:
            let text = raw.prefix { $0 != 0 }
            guard !text.isEmpty else { return nil }
            return .string(String(decoding: text, as: UTF8.self))
        case .bytes:
            return nil
        default:
            guard raw.count >= type.size else { return nil }
            let element = raw.prefix(type.size)
            var bits: UInt64 = 0
            for byte in bigEndian ? Array(element) : element.reversed() { bits = bits << 8 | UInt64(byte) }
            let width = UInt64(type.size * 8)
            let allOnes: UInt64 = width == 64 ? .max : (1 << width) - 1
            switch type.kind {
            case .unsigned:
                guard bits != allOnes, let value = Int64(exactly: bits) else { return nil }
                return .integer(value)
            case .unsignedZ:
                guard bits != 0, let value = Int64(exactly: bits) else { return nil }
                return .integer(value)
            case .signed:
                let signBit: UInt64 = 1 << (width - 1)
                guard bits != signBit - 1 else { return nil }  // 0x7F…: invalid
                // Sign-extend from `width` bits.
                let extended = bits & signBit != 0 ? bits | ~allOnes : bits
                return .integer(Int64(bitPattern: extended))
            case .float:
                guard bits != allOnes else { return nil }
                let value = type.size == 4 ? Double(Float(bitPattern: UInt32(truncatingIfNeeded: bits))) : Double(bitPattern: bits)
                return value.isFinite ? .float(value) : nil
            case .string, .bytes:
                return nil
            }
        }
    }

    private mutating func takeByte(_ what: String) throws(FITError) -> UInt8 {
        guard position < end else { throw failure("is cut off inside \(what)") }
        defer { position += 1 }
        return bytes[position]
    }

    private mutating func take(_ count: Int, _ what: String) throws(FITError) -> ArraySlice<UInt8> {
        guard count <= end - position else { throw failure("is cut off inside \(what)") }
        defer { position += count }
        return bytes[position..<(position + count)]
    }

    private func failure(_ reason: String) -> FITError {
        FITError(reason: reason.hasPrefix("is ") ? "\(reason) (byte \(position))" : "is not valid FIT: \(reason) (byte \(position))")
    }
}

/// FIT's CRC-16 (the FIT SDK's nibble-table form of CRC-16/ARC).
enum FITCRC {
    private static let table: [UInt16] = [
        0x0000, 0xCC01, 0xD801, 0x1400, 0xF001, 0x3C00, 0x2800, 0xE401, 0xA001, 0x6C00, 0x7800, 0xB401, 0x5000, 0x9C01, 0x8801, 0x4400,
    ]

    static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            var step = table[Int(crc & 0xF)]
            crc = (crc >> 4) & 0x0FFF
            crc = crc ^ step ^ table[Int(byte & 0xF)]
            step = table[Int(crc & 0xF)]
            crc = (crc >> 4) & 0x0FFF
            crc = crc ^ step ^ table[Int((byte >> 4) & 0xF)]
        }
        return crc
    }
}
