import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Foundation's XML parser (libxml2's SAX) made safe for documents from outside: every XML the
/// server reads from a client goes through `UntrustedXML.parser(for:)`.
///
/// libxml2 expands internal entities as it reads them, so a 4 MiB body with one 50,000-character
/// entity referenced 80,000 times costs minutes of CPU ("billion laughs" without the nesting).
/// No format we read (GPX, TCX, Apple Health's export) declares entities, so a document that
/// declares any — general or parameter, in its internal DTD subset — is refused before the
/// parser sees it, and external entities and DTDs are never fetched.
package enum UntrustedXML {
    /// Checks `data` and answers a parser over it that resolves no external entity.
    package static func parser(for data: Data) throws(UntrustedXMLError) -> XMLParser {
        try check(data)
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        parser.shouldProcessNamespaces = false
        return parser
    }

    /// Refuses a document that declares entities, or whose encoding the check cannot read.
    package static func check(_ data: Data) throws(UntrustedXMLError) {
        let refusal: UntrustedXMLError? = data.withUnsafeBytes { bytes in
            // UTF-16 and UTF-32 would hide "<!ENTITY" from a byte scan: only UTF-8 (or ASCII) is read.
            if bytes.count >= 2, (bytes[0] == 0xFE && bytes[1] == 0xFF) || (bytes[0] == 0xFF && bytes[1] == 0xFE) || bytes[0] == 0 || bytes[1] == 0 {
                return .unsupportedEncoding
            }
            return contains(bytes, "<!ENTITY") ? .entityDeclaration : nil
        }
        if let refusal { throw refusal }
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
        case .unsupportedEncoding: "must be XML in UTF-8"
        }
    }
}
