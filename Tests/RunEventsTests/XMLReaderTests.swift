import Foundation
import Testing
import UntrustedXML

@Suite("XMLReader: untrusted XML without entities or libxml2")
struct XMLReaderTests {
    static func events(_ text: String) throws -> [String] {
        var seen: [String] = []
        try XMLReader.read(Data(text.utf8)) { event in
            switch event {
            case .start(let name, let attributes):
                seen.append("<\(name)" + attributes.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined() + ">")
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

    /// A value looked up by name is the one iterating the attributes finds, and a name that only
    /// starts or ends like an attribute's, or differs in case, finds nothing.
    @Test func attributesAreFoundByTheirWholeName() throws {
        let text = #"<r type="HK" typeName='x' t="1" ns:unit="mg&amp;dL" é="ü" startDate="2023-05-01 08:30:00 +0200"/>"#
        var checked = 0
        try XMLReader.read(Data(text.utf8)) { event in
            guard case .start(_, let attributes) = event else { return }
            for (name, value) in attributes {
                #expect(attributes[name] == value, "\(name)")
                for miss in [String(name.dropLast()), name + "e", name.uppercased(), "x" + name] where !attributes.contains(where: { $0.key == miss })
                {
                    #expect(attributes[miss] == nil, "\(miss)")
                }
                checked += 1
            }
            #expect(attributes["unit"] == nil && attributes["ns:unit"] == "mg&dL" && attributes[""] == nil)
        }
        #expect(checked == 6)
    }

    @Test(arguments: [
        "<a><b></a></b>", "<a>", "<a></a><b></b>", "text", "<a b=1/>", "<a b='1' b='2'/>", "<a>&unknown;</a>", "<a>&#0;</a>",
        "<a>&#x110000;</a>", "<a>& b</a>", "<1a/>", "<a b='<'/>", "<a/>trailing", "",
        String(repeating: "<a>", count: 300) + String(repeating: "</a>", count: 300),
        #"<?xml version="1.0" encoding="ISO-8859-1"?><a/>"#, "<!DOCTYPE a [<!ENTITY e 'x'>]><a>&e;</a>",
        // In attributes, which are decoded only when read: refused all the same, read or not.
        "<a b='&unknown;'/>", "<a b='&#0;'/>", "<a b='&#+65;'/>", "<a b='x & y'/>", "<a b='1' c='&lt' d='2'/>",
    ])
    func refusesWhatIsNotWellFormedOrNotOurs(_ text: String) {
        #expect(throws: (any Error).self) { try Self.events(text) }
    }

    /// The events of `text` fed in pieces of `size` bytes.
    static func fedEvents(_ text: String, size: Int) throws -> [String] {
        var seen: [String] = []
        var reader = XMLReader()
        let bytes = Array(text.utf8)
        let record: (XMLReader.Event) -> Void = { event in
            switch event {
            case .start(let name, let attributes):
                seen.append("<\(name)" + attributes.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined() + ">")
            case .end(let name): seen.append("</\(name)>")
            case .text(let text): seen.append(text)
            }
        }
        for start in stride(from: 0, to: bytes.count, by: size) {
            try reader.feed(bytes[start..<min(bytes.count, start + size)], record)
        }
        try reader.finish(record)
        return joiningText(seen)
    }

    /// Text may arrive in several events (when fed, and around a CDATA section): neighbours
    /// joined, trimmed, and whitespace dropped.
    static func joiningText(_ events: [String]) -> [String] {
        events.reduce(into: [String]()) { joined, event in
            if !event.hasPrefix("<"), let last = joined.last, !last.hasPrefix("<") { joined[joined.count - 1] += event } else { joined.append(event) }
        }
        .map { $0.hasPrefix("<") ? $0 : $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        .filter { !$0.isEmpty }
    }

    static let appleHealthLike = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE HealthData [
        <!-- HealthKit Export Version: 14 -->
        <!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary|ClinicalRecord)*)>
        <!ATTLIST HealthData
          locale CDATA #REQUIRED
        >
        <!ATTLIST Record
          type          CDATA #REQUIRED
          unit          CDATA #IMPLIED
          value         CDATA #IMPLIED
        >
        ]>
        <HealthData locale="it_IT">
         <ExportDate value="2026-11-20 09:12:44 +0100"/>
         <Record type="HKQuantityTypeIdentifierHeartRate" sourceName="Anna’s Apple Watch" unit="count/min" value="72" startDate="2026-11-19 08:30:00 +0100"><MetadataEntry key="HKMetadataKeyHeartRateMotionContext" value="0"/></Record>
         <Record type="HKQuantityTypeIdentifierStepCount" sourceName="iPhone &amp; co" unit="count" value="12"/>
         <![CDATA[x]]>
        </HealthData>
        """

    @Test func aDocumentFedInPiecesReadsAsTheWholeOne() throws {
        let whole = try Self.fedEvents(Self.appleHealthLike, size: 1 << 20)
        #expect(whole.count == 11)
        for size in [1, 2, 3, 7, 64, 4096] {
            #expect(try Self.fedEvents(Self.appleHealthLike, size: size) == whole, "pieces of \(size) bytes")
        }
    }

    @Test func aFedDocumentCutOffFailsWithItsLine() throws {
        let cut = String(Self.appleHealthLike.utf8.prefix(Self.appleHealthLike.utf8.count - 40))!
        let error = try #require(throws: XMLReadError.self) { try Self.fedEvents(cut, size: 100) }
        #expect(error.line == 17)  // the second Record, cut off
        let entity = Self.appleHealthLike.replacingOccurrences(of: "<!ELEMENT HealthData", with: "<!ENTITY % p 'x'><!ELEMENT HealthData")
        #expect(throws: UntrustedXMLError.entityDeclaration) { try Self.fedEvents(entity, size: 5) }
    }

    @Test func aPieceLongerThanTheLimitIsRefusedWithoutWaitingForItsEnd() throws {
        var reader = XMLReader()
        try reader.feed(Array("<a>".utf8)) { _ in }
        let megabyte = [UInt8](repeating: UInt8(ascii: "x"), count: 1 << 20)
        #expect(throws: XMLReadError.self) {
            for _ in 0...(XMLReader.maximumTokenBytes >> 20) { try reader.feed(megabyte) { _ in } }
        }
    }

    @Test func refusesBytesThatAreNotUTF8() {
        #expect(throws: UntrustedXMLError.unsupportedEncoding) {
            try XMLReader.read(Data([0x3C, 0x61, 0x20, 0xFF, 0x3D, 0x22, 0x22, 0x2F, 0x3E])) { _ in }
        }
        #expect(throws: UntrustedXMLError.unsupportedEncoding) { try XMLReader.read(Data([0xFF, 0xFE, 0x3C, 0x00, 0x61, 0x00])) { _ in } }
    }
}
