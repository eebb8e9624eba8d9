import Foundation

/// The check every XML document from outside passes before it is read (`XMLReader.read` runs it).
///
/// An XML parser that expands internal entities as it reads — libxml2, under Foundation's
/// XMLParser, which read GPX before `XMLReader` — spends minutes of CPU on a 4 MiB body with one
/// 50,000-character entity referenced 80,000 times. No format we read (GPX, TCX, Apple Health's
/// export) declares entities, so a document that declares any — general or parameter, in its
/// internal DTD subset — is refused, and nothing external is ever fetched.
package enum UntrustedXML {
    /// Refuses a document that declares entities, or whose encoding the check cannot read.
    package static func check(_ data: Data) throws(UntrustedXMLError) {
        // Only well-formed UTF-8 is read: UTF-16 or UTF-32 would hide "<!ENTITY" from a byte scan,
        // and Foundation's XMLParser on Linux traps (ends the process) on a name holding bytes
        // that are not UTF-8 — found by the gpx fuzz target
        // (Tests/Fuzz/regressions/gpx/foundationxml-trap-invalid-utf8-attribute-name.gpx).
        guard String(validating: data, as: UTF8.self) != nil else { throw .unsupportedEncoding }
        let refusal: UntrustedXMLError? = data.withUnsafeBytes { bytes in
            if bytes.count >= 2, bytes[0] == 0 || bytes[1] == 0 { return .unsupportedEncoding }
            if let declared = declaredEncoding(bytes), !["utf-8", "utf8", "us-ascii", "ascii"].contains(declared.lowercased()) {
                return .unsupportedEncoding
            }
            return contains(bytes, "<!ENTITY") ? .entityDeclaration : nil
        }
        if let refusal { throw refusal }
    }

    /// The `encoding` of the XML declaration (`<?xml version="1.0" encoding="…"?>`), if any:
    /// libxml2 would re-decode the document by it.
    private static func declaredEncoding(_ bytes: UnsafeRawBufferPointer) -> String? {
        let head = String(decoding: bytes.prefix(200), as: UTF8.self)
        guard head.hasPrefix("<?xml") || head.hasPrefix("\u{FEFF}<?xml"), let end = head.range(of: "?>") else { return nil }
        let declaration = head[..<end.lowerBound]
        guard let match = declaration.firstMatch(of: /encoding\s*=\s*["']([^"']*)["']/) else { return nil }
        return String(match.1)
    }

    private static func contains(_ bytes: UnsafeRawBufferPointer, _ needle: StaticString) -> Bool {
        let pattern = UnsafeRawBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount)
        guard bytes.count >= pattern.count, let first = pattern.first else { return false }
        var index = 0
        let last = bytes.count - pattern.count
        while index <= last {
            if bytes[index] == first {
                var offset = 1
                while offset < pattern.count, bytes[index + offset] == pattern[offset] { offset += 1 }
                if offset == pattern.count { return true }
            }
            index += 1
        }
        return false
    }
}

/// Why an XML document from outside was refused before parsing.
package enum UntrustedXMLError: Error, Equatable, Sendable {
    /// The document declares entities (`<!ENTITY`): never expanded, so never accepted.
    case entityDeclaration
    /// Not UTF-8: a UTF-16 or UTF-32 document.
    case unsupportedEncoding

    package var reason: String {
        switch self {
        case .entityDeclaration: "declares XML entities (<!ENTITY …>), which are not accepted"
        case .unsupportedEncoding: "must be XML in well-formed UTF-8 (no other encoding declared)"
        }
    }
}
