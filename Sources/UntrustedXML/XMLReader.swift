import Foundation

/// A small XML reader for documents from outside, in pure Swift over the document's bytes: the
/// start and end of every element with its attributes, and the text between. Foundation's
/// XMLParser (libxml2 below it) is not used for them: on Linux it ends the process on some
/// malformed names (a force-unwrap of a name that is not UTF-8, a NULL name passed to strlen) —
/// both found within seconds by the gpx fuzz target.
///
/// What it reads: elements, attributes ('…' or "…"), text, CDATA sections, comments, processing
/// instructions and a DOCTYPE (skipped; `UntrustedXML.check` has refused entity declarations
/// before). Character references and the five predefined entities are decoded; any other entity
/// reference is an error, never looked up. Nesting is limited (`maximumDepth`), end tags must
/// match, and the document must have one root element. Namespaces are not resolved: names are
/// given as written (`gpxtpx:hr`); callers match local names.
package struct XMLReader {
    package static let maximumDepth = 256

    /// What the reader meets, in document order.
    package enum Event {
        case start(name: String, attributes: [String: String])
        case end(name: String)
        case text(String)
    }

    private let bytes: [UInt8]
    private var index = 0
    private var stack: [String] = []

    /// Reads `data` (checked by `UntrustedXML.check` first) and hands every event to `handle`;
    /// `handle` may stop the reading by throwing.
    package static func read(_ data: Data, _ handle: (Event) throws -> Void) throws {
        try UntrustedXML.check(data)
        var reader = XMLReader(bytes: Array(data))
        try reader.document(handle)
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }   // a UTF-8 byte order mark
    }

    /// The line of the current position, for error messages.
    private var line: Int { bytes[..<min(index, bytes.count)].reduce(1) { $1 == 0x0A ? $0 + 1 : $0 } }

    private func malformed(_ reason: String) -> XMLReadError { XMLReadError(reason: reason, line: line) }

    private mutating func document(_ handle: (Event) throws -> Void) throws {
        var sawRoot = false
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "<") {
                if starts(with: "<?") {
                    try skip(past: "?>")
                } else if starts(with: "<!--") {
                    try skip(past: "-->")
                } else if starts(with: "<![CDATA[") {
                    guard !stack.isEmpty else { throw malformed("CDATA outside the root element") }
                    index += 9
                    let start = index
                    try skip(past: "]]>")
                    try handle(.text(String(decoding: bytes[start..<(index - 3)], as: UTF8.self)))
                } else if starts(with: "<!DOCTYPE") {
                    guard !sawRoot, stack.isEmpty else { throw malformed("a DOCTYPE after the root element") }
                    try skipDoctype()
                } else if starts(with: "</") {
                    index += 2
                    let name = try self.name()
                    skipSpace()
                    try expect(">")
                    guard let open = stack.popLast(), open == name else { throw malformed("</\(name)> does not close the open element") }
                    try handle(.end(name: name))
                } else {
                    guard !(sawRoot && stack.isEmpty) else { throw malformed("a second root element") }
                    index += 1
                    let name = try self.name()
                    var attributes: [String: String] = [:]
                    while true {
                        let spaced = skipSpace()
                        guard index < bytes.count else { throw malformed("the document ends inside <\(name)>") }
                        if bytes[index] == UInt8(ascii: ">") || starts(with: "/>") { break }
                        guard spaced else { throw malformed("attributes of <\(name)> need a space between them") }
                        let attribute = try self.name()
                        skipSpace()
                        try expect("=")
                        skipSpace()
                        let value = try quoted()
                        guard attributes.updateValue(value, forKey: attribute) == nil else { throw malformed("attribute \(attribute) given twice") }
                    }
                    sawRoot = true
                    try handle(.start(name: name, attributes: attributes))
                    if starts(with: "/>") {
                        index += 2
                        try handle(.end(name: name))
                    } else {
                        index += 1
                        guard stack.count < Self.maximumDepth else { throw malformed("elements nested more than \(Self.maximumDepth) deep") }
                        stack.append(name)
                    }
                }
            } else {
                let start = index
                while index < bytes.count, bytes[index] != UInt8(ascii: "<") { index += 1 }
                let raw = bytes[start..<index]
                if stack.isEmpty {
                    guard raw.allSatisfy(Self.isSpace) else { throw malformed("text outside the root element") }
                } else {
                    try handle(.text(try decode(raw)))
                }
            }
        }
        guard sawRoot else { throw malformed("no root element") }
        guard stack.isEmpty else { throw malformed("<\(stack.last ?? "")> is not closed") }
    }

    // MARK: - Pieces

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

    /// Bytes of a name: ASCII letters, digits, `_ : . -`, and every byte of a multi-byte UTF-8
    /// character (the document is valid UTF-8, so such a run decodes to whole characters).
    private static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte >= 0x80
    }

    private mutating func name() throws -> String {
        let start = index
        while index < bytes.count, Self.isNameByte(bytes[index]) { index += 1 }
        guard index > start else { throw malformed("a name is expected") }
        let first = bytes[start]
        guard !(first >= 0x30 && first <= 0x39), first != UInt8(ascii: "-"), first != UInt8(ascii: ".") else {
            throw malformed("a name cannot start with a digit, '-' or '.'")
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    @discardableResult
    private mutating func skipSpace() -> Bool {
        let start = index
        while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
        return index > start
    }

    private func starts(with text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        return text.withUTF8Buffer { pattern in pattern.indices.allSatisfy { bytes[index + $0] == pattern[$0] } }
    }

    private mutating func expect(_ text: StaticString) throws {
        guard starts(with: text) else { throw malformed("'\(text)' is expected") }
        index += text.utf8CodeUnitCount
    }

    /// Moves past the next occurrence of `end`.
    private mutating func skip(past end: StaticString) throws {
        while index < bytes.count {
            if starts(with: end) {
                index += end.utf8CodeUnitCount
                return
            }
            index += 1
        }
        throw malformed("'\(end)' is missing")
    }

    /// `<!DOCTYPE name …>` with an optional internal subset in brackets (quoted strings skipped).
    private mutating func skipDoctype() throws {
        var depth = 0
        var quote: UInt8?
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if byte == UInt8(ascii: "[") {
                depth += 1
            } else if byte == UInt8(ascii: "]") {
                depth -= 1
            } else if byte == UInt8(ascii: ">"), depth <= 0 {
                return
            }
        }
        throw malformed("the DOCTYPE is not closed")
    }

    private mutating func quoted() throws -> String {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else {
            throw malformed("an attribute value must be quoted")
        }
        let quote = bytes[index]
        index += 1
        let start = index
        while index < bytes.count, bytes[index] != quote {
            guard bytes[index] != UInt8(ascii: "<") else { throw malformed("'<' in an attribute value") }
            index += 1
        }
        guard index < bytes.count else { throw malformed("an attribute value is not closed") }
        let raw = bytes[start..<index]
        index += 1
        return try decode(raw)
    }

    /// Text with its character references and predefined entities replaced.
    private func decode(_ raw: ArraySlice<UInt8>) throws -> String {
        guard raw.contains(UInt8(ascii: "&")) else { return String(decoding: raw, as: UTF8.self) }
        var output: [UInt8] = []
        output.reserveCapacity(raw.count)
        var position = raw.startIndex
        while position < raw.endIndex {
            let byte = raw[position]
            guard byte == UInt8(ascii: "&") else {
                output.append(byte)
                position += 1
                continue
            }
            guard let semicolon = raw[position...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else {
                throw malformed("'&' must start a reference such as &amp;")
            }
            let reference = String(decoding: raw[(position + 1)..<semicolon], as: UTF8.self)
            let scalar: Unicode.Scalar?
            switch reference {
            case "lt": scalar = "<"
            case "gt": scalar = ">"
            case "amp": scalar = "&"
            case "quot": scalar = "\""
            case "apos": scalar = "'"
            default:
                // &#N; or &#xN; — at most 8 digits (the slice above), so the value fits a UInt32.
                if reference.hasPrefix("#x"), let value = UInt32(reference.dropFirst(2), radix: 16) {
                    scalar = Unicode.Scalar(value)
                } else if reference.hasPrefix("#"), !reference.hasPrefix("#x"), let value = UInt32(reference.dropFirst(), radix: 10) {
                    scalar = Unicode.Scalar(value)
                } else {
                    throw malformed("the entity &\(reference); is not read (only &lt; &gt; &amp; &quot; &apos; and character references)")
                }
            }
            guard let scalar, scalar.value != 0 else { throw malformed("&\(reference); is not a character") }
            output.append(contentsOf: Array(String(scalar).utf8))
            position = semicolon + 1
        }
        return String(decoding: output, as: UTF8.self)
    }
}

/// Why a document from outside could not be read.
package struct XMLReadError: Error, Equatable, Sendable {
    package let reason: String
    package let line: Int
}
