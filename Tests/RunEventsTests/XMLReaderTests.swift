import Foundation
import Testing
import UntrustedXML

@Suite("XMLReader: untrusted XML without entities or libxml2")
struct XMLReaderTests {
    static func events(_ text: String) throws -> [String] {
        var seen: [String] = []
        try XMLReader.read(Data(text.utf8)) { event in
            switch event {
            case .start(let name, let attributes): seen.append("<\(name)" + attributes.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined() + ">")
            case .end(let name): seen.append("</\(name)>")
            case .text(let text): if !text.allSatisfy(\.isWhitespace) { seen.append(text) }
            }
        }
        return seen
    }

    @Test func readsElementsAttributesTextAndReferences() throws {
        let text = """
            \u{FEFF}<?xml version="1.0" encoding="UTF-8"?><!-- a comment --><!DOCTYPE gpx [<!ELEMENT gpx ANY>]>
            <gpx a='1' b="x &amp; &#x3C;y&#62;"><name>Caf&#233; &lt;1&gt;</name><![CDATA[<raw>]]><e/></gpx>
            """
        #expect(try Self.events(text) == ["<gpx a=1 b=x & <y>>", "<name>", "Café <1>", "</name>", "<raw>", "<e>", "</e>", "</gpx>"])
    }

    @Test(arguments: [
        "<a><b></a></b>", "<a>", "<a></a><b></b>", "text", "<a b=1/>", "<a b='1' b='2'/>", "<a>&unknown;</a>", "<a>&#0;</a>",
        "<a>&#x110000;</a>", "<a>& b</a>", "<1a/>", "<a b='<'/>", "<a/>trailing", "",
        String(repeating: "<a>", count: 300) + String(repeating: "</a>", count: 300),
        #"<?xml version="1.0" encoding="ISO-8859-1"?><a/>"#, "<!DOCTYPE a [<!ENTITY e 'x'>]><a>&e;</a>",
    ])
    func refusesWhatIsNotWellFormedOrNotOurs(_ text: String) {
        #expect(throws: (any Error).self) { try Self.events(text) }
    }

    @Test func refusesBytesThatAreNotUTF8() {
        #expect(throws: UntrustedXMLError.unsupportedEncoding) { try XMLReader.read(Data([0x3C, 0x61, 0x20, 0xFF, 0x3D, 0x22, 0x22, 0x2F, 0x3E])) { _ in } }
        #expect(throws: UntrustedXMLError.unsupportedEncoding) { try XMLReader.read(Data([0xFF, 0xFE, 0x3C, 0x00, 0x61, 0x00])) { _ in } }
    }
}
