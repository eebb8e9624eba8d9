import Foundation

/// A small XML reader for documents from outside, in pure Swift: the start and end of every
/// element with its attributes, and the text between. Foundation's XMLParser (libxml2 below it)
/// is not used for them: on Linux it ends the process on some malformed names (a force-unwrap of
/// a name that is not UTF-8, a NULL name passed to strlen) — both found within seconds by the gpx
/// fuzz target — and it expands internal entities.
///
/// It reads a document given whole (`read(_:_:)`) or in pieces as they arrive (`feed(_:_:)` then
/// `finish(_:)`): an Apple Health `export.xml` of several gigabytes passes through a buffer
/// that holds only the markup or text being read, never the document.
///
/// What it reads: elements, attributes ('…' or "…"), text, CDATA sections, comments, processing
/// instructions and a DOCTYPE (skipped, refused if it declares an entity: see `UntrustedXMLError`).
/// Character references and the five predefined entities are decoded; any other entity
/// reference is an error, never looked up. Only UTF-8 is read (every name, value and text is
/// checked). Nesting is limited (`maximumDepth`), as is one piece of markup or text
/// (`maximumTokenBytes`); end tags must match, and the document must have one root element.
/// Namespaces are not resolved: names are given as written (`gpxtpx:hr`); callers match local
/// names.
package struct XMLReader {
    package static let maximumDepth = 256
    /// The longest piece of markup or text read at once; a text longer than this is refused.
    package static let maximumTokenBytes = 8 << 20

    /// What the reader meets, in document order.
    package enum Event {
        case start(name: String, attributes: XMLAttributes)
        case end(name: String)
        case text(String)
    }

    /// Where a reader stands between two pieces of a document: enough to go on reading from
    /// there with a new reader (after a crash, on another instance).
    package struct Position: Sendable, Equatable, Codable {
        /// Bytes of the document before this point.
        package var offset: Int64
        package var line: Int
        /// The elements open at this point, outermost first.
        package var open: [String]

        package init(offset: Int64, line: Int, open: [String]) {
            self.offset = offset
            self.line = line
            self.open = open
        }
    }

    /// The unread bytes (`buffer[index...]`) and the ones already read before them.
    private var buffer: [UInt8] = []
    private var index = 0
    /// Offset in the document of `buffer[0]`.
    private var bufferOffset: Int64 = 0
    /// The line at `buffer[lineIndex]`, brought forward as reading goes (counting from the
    /// start of the buffer at every checkpoint would cost the buffer's length each time).
    private var lineIndex = 0
    private var lineAtIndex = 1
    private var stack: [String] = []
    private var sawRoot = false
    private var sawStart = false
    /// No more bytes will come: a piece cut off by the end is an error, not a wait.
    private var final = false
    /// The byte that must arrive before the unfinished piece at `index` can end ('>' for markup,
    /// '<' for text): bytes fed without it are not scanned again, so a document fed a few bytes
    /// at a time is still read in linear time.
    private var awaiting: UInt8?

    /// The depth at which `checkpoint` is taken (1: between the children of the root).
    package var checkpointDepth: Int?
    /// The position after the last end tag that left `checkpointDepth` elements open — after
    /// the handler saw its event. A caller that releases what it read only at that depth knows
    /// that everything released lies before this position and nothing after it.
    package private(set) var checkpoint: Position?

    package init() {}

    /// A reader that goes on from `position` (taken by another reader of the same document): it
    /// is fed the document's bytes from `position.offset` on.
    package init(resumingAt position: Position) {
        bufferOffset = position.offset
        lineAtIndex = position.line
        stack = position.open
        sawRoot = true
        sawStart = true
        checkpoint = position
    }

    /// Where the reader stands: the bytes before the first piece it has not read yet.
    package var position: Position { Position(offset: bufferOffset + Int64(index), line: line, open: stack) }

    /// Reads `data` whole and hands every event to `handle`; `handle` may stop the reading by
    /// throwing.
    package static func read(_ data: Data, _ handle: (Event) throws -> Void) throws {
        var reader = XMLReader()
        try reader.feed(data, handle)
        try reader.finish(handle)
    }

    /// Reads the events that `bytes`, after those fed before, complete; the rest waits for more.
    package mutating func feed(_ bytes: some Sequence<UInt8>, _ handle: (Event) throws -> Void) throws {
        precondition(!final, "feed after finish")
        if index > 0, index >= buffer.count / 2 {
            countLines()
            bufferOffset += Int64(index)
            buffer.removeFirst(index)
            index = 0
            lineIndex = 0
        }
        let start = buffer.count
        buffer.append(contentsOf: bytes)
        if let byte = awaiting, !buffer[start...].contains(byte), buffer.count - index <= Self.maximumTokenBytes { return }
        try readAvailable(handle)
        guard buffer.count - index <= Self.maximumTokenBytes else {
            throw malformed("a piece of text or markup is longer than \(Self.maximumTokenBytes >> 20) MiB")
        }
    }

    /// Reads what is left: the document must be complete.
    package mutating func finish(_ handle: (Event) throws -> Void) throws {
        final = true
        try readAvailable(handle)
        guard sawRoot else { throw malformed("no root element") }
        guard stack.isEmpty else { throw malformed("<\(stack.last ?? "")> is not closed") }
    }

    /// The line of the current position, for error messages.
    package var line: Int {
        let end = min(index, buffer.count)
        return lineAtIndex + (lineIndex < end ? buffer[lineIndex..<end].reduce(0) { $1 == 0x0A ? $0 + 1 : $0 } : 0)
    }

    /// Brings the line count forward to the current position.
    private mutating func countLines() {
        lineAtIndex = line
        lineIndex = min(index, buffer.count)
    }

    /// Takes the checkpoint if the element just closed left `checkpointDepth` open.
    private mutating func closed() {
        guard stack.count == checkpointDepth else { return }
        countLines()
        checkpoint = position
    }

    private func malformed(_ reason: String) -> XMLReadError { XMLReadError(reason: reason, line: line) }

    // MARK: - Tokens

    /// Reads every complete piece in the buffer; stops at one that the end of the bytes cuts off
    /// (unless `final`, where that is an error).
    private mutating func readAvailable(_ handle: (Event) throws -> Void) throws {
        if !sawStart {
            guard buffer.count >= 4 || final else { return }
            try checkEncoding()
            sawStart = true
        }
        while index < buffer.count {
            guard let end = try tokenEnd() else {
                if final { throw malformed(buffer[index] == UInt8(ascii: "<") ? "the document ends inside markup" : "the document ends inside text") }
                awaiting = buffer[index] == UInt8(ascii: "<") ? UInt8(ascii: ">") : UInt8(ascii: "<")
                return
            }
            awaiting = nil
            try token(through: end, handle)
        }
    }

    /// A UTF-16 or UTF-32 document, or one that declares another encoding, is refused before
    /// anything is read; a UTF-8 byte order mark is skipped.
    private mutating func checkEncoding() throws {
        let head = buffer.prefix(4)
        if head.count >= 2,
            head[head.startIndex] == 0 || head[head.startIndex + 1] == 0 || head.starts(with: [0xFF, 0xFE]) || head.starts(with: [0xFE, 0xFF])
        {
            throw UntrustedXMLError.unsupportedEncoding
        }
        if buffer.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
    }

    /// Where the piece starting at `index` ends (the index after it), or nil if the buffer
    /// does not hold all of it yet.
    private func tokenEnd() throws -> Int? {
        guard buffer[index] == UInt8(ascii: "<") else {
            // Text runs to the next '<' (or, when final, to the end).
            if let next = buffer[index...].firstIndex(of: UInt8(ascii: "<")) { return next }
            return final ? buffer.count : nil
        }
        // The longest opening to tell the kinds of markup apart is "<![CDATA[" (9 bytes).
        if buffer.count - index < 9, !final, !buffer[index...].contains(UInt8(ascii: ">")) { return nil }
        if starts(with: "<?") { return end(after: "?>", from: index + 2) }
        if starts(with: "<!--") { return end(after: "-->", from: index + 4) }
        if starts(with: "<![CDATA[") { return end(after: "]]>", from: index + 9) }
        if starts(with: "<!DOCTYPE") { return doctypeEnd() }
        // A tag: to the first '>' outside a quoted attribute value.
        var quote: UInt8?
        var position = index + 1
        while position < buffer.count {
            let byte = buffer[position]
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if byte == UInt8(ascii: ">") {
                return position + 1
            }
            position += 1
        }
        return final ? buffer.count : nil
    }

    /// The index after the first `terminator` at or after `start`.
    private func end(after terminator: StaticString, from start: Int) -> Int? {
        let count = terminator.utf8CodeUnitCount
        var position = start
        while position + count <= buffer.count {
            if Self.matches(buffer, at: position, terminator) { return position + count }
            position += 1
        }
        return final ? buffer.count : nil
    }

    /// `<!DOCTYPE name …>` with an optional internal subset in brackets (quoted strings skipped).
    private func doctypeEnd() -> Int? {
        var depth = 0
        var quote: UInt8?
        var position = index
        while position < buffer.count {
            let byte = buffer[position]
            position += 1
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if byte == UInt8(ascii: "[") {
                depth += 1
            } else if byte == UInt8(ascii: "]") {
                depth -= 1
            } else if byte == UInt8(ascii: ">"), depth <= 0 {
                return position
            }
        }
        return final ? buffer.count : nil
    }

    /// Reads the piece `buffer[index..<end]` (whole, or cut off by the end of a final buffer).
    private mutating func token(through end: Int, _ handle: (Event) throws -> Void) throws {
        guard buffer[index] == UInt8(ascii: "<") else {
            let raw = buffer[index..<end]
            if stack.isEmpty {
                guard raw.allSatisfy(Self.isSpace) else { throw malformed("text outside the root element") }
            } else {
                try handle(.text(try decode(raw)))
            }
            index = end
            return
        }
        if starts(with: "<?") {
            if starts(with: "<?xml "), !sawRoot, stack.isEmpty { try checkDeclaration(buffer[index..<end]) }
            try expectClosed(end, by: "?>")
            index = end
        } else if starts(with: "<!--") {
            try expectClosed(end, by: "-->")
            index = end
        } else if starts(with: "<![CDATA[") {
            guard !stack.isEmpty else { throw malformed("CDATA outside the root element") }
            try expectClosed(end, by: "]]>")
            let text = try Self.utf8(buffer[(index + 9)..<(end - 3)])
            index = end
            try handle(.text(text))
        } else if starts(with: "<!DOCTYPE") {
            guard !sawRoot, stack.isEmpty else { throw malformed("a DOCTYPE after the root element") }
            guard end <= buffer.count, buffer[end - 1] == UInt8(ascii: ">") else { throw malformed("the DOCTYPE is not closed") }
            // The internal subset may declare elements and attributes (Apple Health's export
            // does) but never an entity, general or parameter: see `UntrustedXMLError`.
            if Self.contains(buffer[index..<end], "<!ENTITY") { throw UntrustedXMLError.entityDeclaration }
            index = end
        } else if starts(with: "</") {
            index += 2
            let name = try self.name()
            skipSpace()
            try expect(">")
            guard let open = stack.popLast(), open == name else { throw malformed("</\(name)> does not close the open element") }
            try handle(.end(name: name))
            closed()
        } else {
            guard !(sawRoot && stack.isEmpty) else { throw malformed("a second root element") }
            let tagStart = index
            index += 1
            let name = try self.name()
            // Each attribute checked here, its value decoded only when read (XMLAttributes).
            var bounds: [Int] = []
            bounds.reserveCapacity(36)  // an Apple Health record has 6 to 9
            while true {
                let spaced = skipSpace()
                guard index < end else { throw malformed("the document ends inside <\(name)>") }
                if buffer[index] == UInt8(ascii: ">") || starts(with: "/>") { break }
                guard spaced else { throw malformed("attributes of <\(name)> need a space between them") }
                let nameStart = index
                try skipName()
                let nameEnd = index
                skipSpace()
                try expect("=")
                skipSpace()
                let value = try quoted()
                for other in stride(from: 0, to: bounds.count, by: 4)
                where buffer[bounds[other]..<bounds[other + 1]].elementsEqual(buffer[nameStart..<nameEnd]) {
                    throw malformed("attribute \(String(decoding: buffer[nameStart..<nameEnd], as: UTF8.self)) given twice")
                }
                bounds.append(nameStart)
                bounds.append(nameEnd)
                bounds.append(value.lowerBound)
                bounds.append(value.upperBound)
            }
            let attributes = XMLAttributes(bytes: buffer[tagStart..<index], bounds: bounds)
            sawRoot = true
            let empty = starts(with: "/>")
            index += empty ? 2 : 1
            if !empty {
                guard stack.count < Self.maximumDepth else { throw malformed("elements nested more than \(Self.maximumDepth) deep") }
                stack.append(name)
            }
            try handle(.start(name: name, attributes: attributes))
            if empty {
                try handle(.end(name: name))
                closed()
            }
        }
    }

    /// A piece cut off by the end of the document lacks its terminator.
    private func expectClosed(_ end: Int, by terminator: StaticString) throws {
        let count = terminator.utf8CodeUnitCount
        guard end - index >= count, Self.matches(buffer, at: end - count, terminator) else { throw malformed("'\(terminator)' is missing") }
    }

    /// The `encoding` of the XML declaration (`<?xml version="1.0" encoding="…"?>`): only UTF-8
    /// (or its subset ASCII) is read.
    private func checkDeclaration(_ declaration: ArraySlice<UInt8>) throws {
        let text = String(decoding: declaration, as: UTF8.self)
        guard let match = text.firstMatch(of: /encoding\s*=\s*["']([^"']*)["']/) else { return }
        guard ["utf-8", "utf8", "us-ascii", "ascii"].contains(match.1.lowercased()) else { throw UntrustedXMLError.unsupportedEncoding }
    }

    // MARK: - Pieces

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

    /// Bytes of a name: ASCII letters, digits, `_ : . -`, and every byte of a multi-byte UTF-8
    /// character (checked to decode to whole characters).
    private static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte >= 0x80
    }

    private mutating func name() throws -> String {
        let start = index
        try skipName()
        return String(decoding: buffer[start..<index], as: UTF8.self)  // checked by skipName
    }

    /// Moves past a name, checked: name bytes, not starting with a digit, '-' or '.', UTF-8.
    private mutating func skipName() throws {
        let start = index
        var ascii = true
        while index < buffer.count, Self.isNameByte(buffer[index]) {
            ascii = ascii && buffer[index] < 0x80
            index += 1
        }
        guard index > start else { throw malformed("a name is expected") }
        let first = buffer[start]
        guard !(first >= 0x30 && first <= 0x39), first != UInt8(ascii: "-"), first != UInt8(ascii: ".") else {
            throw malformed("a name cannot start with a digit, '-' or '.'")
        }
        if !ascii { _ = try Self.utf8(buffer[start..<index]) }
    }

    /// `bytes` as a string, refusing bytes that are not UTF-8. ASCII — nearly every name and
    /// value of the documents we read — needs no validating: `String(validating:as:)` is generic
    /// and not specialised for us, and was a fifth of reading an Apple Health export (perf).
    private static func utf8(_ bytes: ArraySlice<UInt8>) throws -> String {
        if bytes.allSatisfy({ $0 < 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw UntrustedXMLError.unsupportedEncoding }
        return text
    }

    @discardableResult
    private mutating func skipSpace() -> Bool {
        let start = index
        while index < buffer.count, Self.isSpace(buffer[index]) { index += 1 }
        return index > start
    }

    private func starts(with text: StaticString) -> Bool { Self.matches(buffer, at: index, text) }

    private static func matches(_ bytes: [UInt8], at position: Int, _ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard position + count <= bytes.count else { return false }
        return text.withUTF8Buffer { pattern in pattern.indices.allSatisfy { bytes[position + $0] == pattern[$0] } }
    }

    private static func contains(_ bytes: ArraySlice<UInt8>, _ text: StaticString) -> Bool {
        text.withUTF8Buffer { pattern in
            guard bytes.count >= pattern.count else { return false }
            return (bytes.startIndex...(bytes.endIndex - pattern.count)).contains { position in
                pattern.indices.allSatisfy { bytes[position + $0] == pattern[$0] }
            }
        }
    }

    private mutating func expect(_ text: StaticString) throws {
        guard starts(with: text) else { throw malformed("'\(text)' is expected") }
        index += text.utf8CodeUnitCount
    }

    /// Moves past a quoted attribute value, checked (UTF-8, references); returns where its
    /// text lies in the buffer.
    private mutating func quoted() throws -> Range<Int> {
        guard index < buffer.count, buffer[index] == UInt8(ascii: "\"") || buffer[index] == UInt8(ascii: "'") else {
            throw malformed("an attribute value must be quoted")
        }
        let quote = buffer[index]
        index += 1
        let start = index
        while index < buffer.count, buffer[index] != quote {
            guard buffer[index] != UInt8(ascii: "<") else { throw malformed("'<' in an attribute value") }
            index += 1
        }
        guard index < buffer.count else { throw malformed("an attribute value is not closed") }
        let raw = buffer[start..<index]
        index += 1
        try check(raw)
        return start..<(index - 1)
    }

    /// Refuses `raw` unless it is UTF-8 and each '&' starts a reference we read.
    private func check(_ raw: ArraySlice<UInt8>) throws {
        if raw.contains(where: { $0 >= 0x80 }) { _ = try Self.utf8(raw) }
        var position = raw.startIndex
        while let reference = raw[position...].firstIndex(of: UInt8(ascii: "&")) {
            position = try referenceEnd(raw, at: reference)
        }
    }

    /// The index after the reference at `position` (an '&'), or the error that it is not one
    /// we read.
    private func referenceEnd(_ raw: ArraySlice<UInt8>, at position: Int) throws -> Int {
        if let (_, next) = XMLReference.read(raw, at: position) { return next }
        guard let semicolon = raw[position...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else {
            throw malformed("'&' must start a reference such as &amp;")
        }
        let reference = String(decoding: raw[(position + 1)..<semicolon], as: UTF8.self)
        if reference.hasPrefix("#") { throw malformed("&\(reference); is not a character") }
        throw malformed("the entity &\(reference); is not read (only &lt; &gt; &amp; &quot; &apos; and character references)")
    }

    /// Text with its character references and predefined entities replaced.
    private func decode(_ raw: ArraySlice<UInt8>) throws -> String {
        guard raw.contains(UInt8(ascii: "&")) else { return try Self.utf8(raw) }
        try check(raw)
        return XMLReference.decoded(raw)
    }
}

/// Why a document from outside could not be read.
package struct XMLReadError: Error, Equatable, Sendable {
    package let reason: String
    package let line: Int

    package init(reason: String, line: Int) {
        self.reason = reason
        self.line = line
    }
}
