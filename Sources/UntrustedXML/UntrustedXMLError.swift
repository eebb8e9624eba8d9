/// Why an XML document from outside was refused: the rules `XMLReader` applies as it reads.
///
/// An XML parser that expands internal entities as it reads — libxml2, under Foundation's
/// XMLParser, which read GPX before `XMLReader` — spends minutes of CPU on a 4 MiB body with one
/// 50,000-character entity referenced 80,000 times. No format we read (GPX, TCX, Apple Health's
/// export, whose DOCTYPE declares elements and attributes only) declares entities, so a document
/// whose DTD declares any — general or parameter — is refused, and nothing external is ever
/// fetched. Only well-formed UTF-8 is read: UTF-16 or UTF-32 would hide "<!ENTITY" from a byte
/// scan, and Foundation's XMLParser on Linux traps (ends the process) on a name holding bytes
/// that are not UTF-8 — found by the gpx fuzz target
/// (Tests/Fuzz/regressions/gpx/foundationxml-trap-invalid-utf8-attribute-name.gpx).
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
