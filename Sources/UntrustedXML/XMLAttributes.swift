import Foundation

/// The attributes of one start tag, decoded when asked for.
///
/// The reader checks every attribute when it reads the tag — names, quoting, UTF-8, that each
/// reference is a character reference or one of the five predefined entities, no name twice —
/// but builds a string only for the values a caller reads. An Apple Health `Record` carries nine
/// attributes of which the import reads seven; building a dictionary of all of them, the
/// `device` description with its `&lt;…&gt;` decoded, was a fifth of reading an export (perf).
package struct XMLAttributes: Sequence {
    /// The tag's bytes (sharing the reader's buffer).
    private let bytes: ArraySlice<UInt8>
    /// Per attribute: name start, name end, value start, value end (indices into `bytes`).
    private let bounds: [Int]

    init(bytes: ArraySlice<UInt8>, bounds: [Int]) {
        self.bytes = bytes
        self.bounds = bounds
    }

    package var count: Int { bounds.count / 4 }

    /// The value of the attribute named `name` (as written, prefix included), decoded.
    package subscript(name: String) -> String? {
        guard let position = position(of: name) else { return nil }
        return Self.value(bytes[bounds[position + 2]..<bounds[position + 3]])
    }

    /// Where `name`'s bounds start in `bounds`, compared as bytes: the generic `elementsEqual` of
    /// a `String.UTF8View` with the tag's bytes was 7 % of the import's reading thread (perf), for
    /// six lookups a record.
    private func position(of name: String) -> Int? {
        var name = name
        return name.withUTF8 { key in
            bytes.withUnsafeBytes { tag in
                var position = 0
                while position < bounds.count {
                    let start = bounds[position] - bytes.startIndex, length = bounds[position + 1] - bounds[position]
                    if length == key.count, let keyBase = key.baseAddress, let tagBase = tag.baseAddress,
                        memcmp(tagBase + start, keyBase, length) == 0
                    {
                        return position
                    }
                    position += 4
                }
                return nil
            }
        }
    }

    package func makeIterator() -> AnyIterator<(key: String, value: String)> {
        var position = 0
        return AnyIterator {
            guard position < bounds.count else { return nil }
            defer { position += 4 }
            let name = String(decoding: bytes[bounds[position]..<bounds[position + 1]], as: UTF8.self)
            return (name, Self.value(bytes[bounds[position + 2]..<bounds[position + 3]]))
        }
    }

    /// A value the reader checked: UTF-8, references well formed.
    private static func value(_ raw: ArraySlice<UInt8>) -> String {
        raw.contains(UInt8(ascii: "&")) ? XMLReference.decoded(raw) : String(decoding: raw, as: UTF8.self)
    }
}

/// `&…;` references: the five predefined entities and character references (`&#N;`, `&#xN;`).
/// No other entity is ever looked up.
enum XMLReference {
    /// `raw`, already checked (UTF-8, every reference one we read), with its references replaced.
    static func decoded(_ raw: ArraySlice<UInt8>) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(raw.count)
        var position = raw.startIndex
        while position < raw.endIndex {
            guard raw[position] == UInt8(ascii: "&"), let (scalar, next) = read(raw, at: position) else {
                output.append(raw[position])
                position += 1
                continue
            }
            output.append(contentsOf: String(scalar).utf8)
            position = next
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The character of the reference starting at `position` (an '&') and the index after its
    /// ';', or nil if it is not one we read.
    static func read(_ raw: ArraySlice<UInt8>, at position: Int) -> (Unicode.Scalar, Int)? {
        // At most 12 bytes to the ';': `&#x10FFFF;` and `&#1114111;` fit, so the value fits a UInt32.
        guard let semicolon = raw[position...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else { return nil }
        let name = raw[(position + 1)..<semicolon]
        let scalar: Unicode.Scalar?
        if name.elementsEqual("lt".utf8) {
            scalar = "<"
        } else if name.elementsEqual("gt".utf8) {
            scalar = ">"
        } else if name.elementsEqual("amp".utf8) {
            scalar = "&"
        } else if name.elementsEqual("quot".utf8) {
            scalar = "\""
        } else if name.elementsEqual("apos".utf8) {
            scalar = "'"
        } else if name.first == UInt8(ascii: "#") {
            let digits = name.dropFirst()
            let hex = digits.first == UInt8(ascii: "x")
            let text = String(decoding: hex ? digits.dropFirst() : digits, as: UTF8.self)
            // UInt32(_:radix:) accepts a sign; a reference does not.
            guard !text.isEmpty, text.utf8.allSatisfy({ $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: "-") }),
                let value = UInt32(text, radix: hex ? 16 : 10)
            else { return nil }
            scalar = Unicode.Scalar(value)
        } else {
            scalar = nil
        }
        guard let scalar, scalar.value != 0 else { return nil }
        return (scalar, semicolon + 1)
    }
}
