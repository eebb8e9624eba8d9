import Foundation
import UntrustedXML

/// What the XML formats of devices (GPX, TCX) share: `XMLReader` (no entity declared, expanded or
/// fetched), names matched by their local part, numbers that must be finite.
enum DeviceXML {
    /// Reads `bytes` whole, handing every event to `handle`; every failure becomes an
    /// `ActivityFileError` naming what is wrong.
    static func read(_ bytes: [UInt8], _ handle: (XMLReader.Event) throws(ActivityFileError) -> Void) throws(ActivityFileError) {
        do {
            try XMLReader.read(Data(bytes)) { event in try handle(event) }
        } catch let error as ActivityFileError {
            throw error
        } catch let error as UntrustedXMLError {
            throw ActivityFileError(reason: error.reason)
        } catch let error as XMLReadError {
            throw ActivityFileError(reason: "is not well-formed XML (line \(error.line): \(error.reason))")
        } catch {
            throw ActivityFileError(reason: "is not well-formed XML")
        }
    }

    /// `gpxtpx:hr` → `hr`: namespaces are matched by local name.
    static func localName(_ name: String) -> String {
        name.split(separator: ":").last.map(String.init) ?? name
    }

    /// A finite number written as text, surrounding white space allowed.
    static func number(_ text: String?) -> Double? {
        guard let value = text.flatMap({ Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) }), value.isFinite else { return nil }
        return value
    }

    /// A name a person wrote, trimmed and cut to 200 characters; `nil` when empty.
    static func label(_ text: String) -> String? {
        let trimmed = String(text.trimmingCharacters(in: .whitespacesAndNewlines).prefix(200))
        return trimmed.isEmpty ? nil : trimmed
    }
}

/// The text of one element of interest, gathered from its pieces between start and end.
struct ElementText {
    private var name: String?
    private var text = ""

    mutating func begin(_ name: String) {
        self.name = name
        text = ""
    }

    mutating func append(_ piece: String) {
        if name != nil, text.utf8.count < 4096 { text += piece }
    }

    /// The element's text, trimmed, when `name` is the element being gathered.
    mutating func end(_ name: String) -> String? {
        guard name == self.name else { return nil }
        self.name = nil
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
