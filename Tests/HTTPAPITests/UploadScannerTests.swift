import Data4HelpCore
import Foundation
import HealthSharing
import NIOCore
import SeededRandom
import Testing

@testable import HTTPAPI

@Suite("The upload byte scanner agrees with Foundation's decoder")
struct UploadScannerTests {
    /// Every field, an unknown key, and near misses of the field names (a prefix, a longer name,
    /// another case) that both paths must skip as unknown.
    static let fields = [
        "id", "type", "value", "unit", "start", "end", "source", "latitude", "longitude", "accuracy", "altitude", "time", "extra",
        "typ", "Time", "values", "starts", "i", "altitudes", "longitud",
    ]

    static func randomValue(_ random: inout SplitMix64, depth: Int = 0) -> String {
        switch Int.random(in: 0..<16, using: &random) {
        case 0: return #""plain text""#
        case 1: return #""heartRate""#
        case 2: return #""2026-11-21T08:30:00.250+01:00""#
        case 3: return #""caf\u00e9""#  // an escape: the scanner leaves it to Foundation
        case 4: return "\"caffè ☕\""
        case 5: return String(Int.random(in: -500...500, using: &random))
        case 6: return String(Double.random(in: -200...200, using: &random))
        case 7:
            return [
                "1e3", "-0", "2.5E-2", "0.0", "1e400", "-1e400", "01", "1.", "-", "0e3", "0E3", "0e+3", "-0e3", "0.0e2", "1e-400", "4e-320",
                "-2.5e-310",
            ].randomElement(
                using: &random)!
        case 8: return ["true", "false", "null", "nul"].randomElement(using: &random)!
        case 9 where depth < 3:
            return "[" + (0..<Int.random(in: 0...3, using: &random)).map { _ in randomValue(&random, depth: depth + 1) }.joined(separator: ",") + "]"
        case 10 where depth < 3:
            return "{"
                + (0..<Int.random(in: 0...2, using: &random)).map { _ in "\"k\": " + randomValue(&random, depth: depth + 1) }.joined(separator: ",")
                + "}"
        case 11: return #""""#
        // Readings as devices write them (computed from their digits by the scanner), and numbers
        // around its 15-digit limit (parsed from their text past it).
        case 12: return String(format: "%.\(Int.random(in: 1...6, using: &random))f", Double.random(in: -300...300, using: &random))
        case 13:
            let digits = Int.random(in: 13...18, using: &random)
            let text = (0..<digits).map { index in String(Int.random(in: index == 0 ? 1...9 : 0...9, using: &random)) }.joined()
            let point = Int.random(in: 0...digits, using: &random)
            return point == 0 || point == digits ? text : String(text.prefix(point)) + "." + String(text.dropFirst(point))
        default: return String(Int.random(in: 20...220, using: &random))
        }
    }

    static func randomItem(_ random: inout SplitMix64) -> String {
        if Int.random(in: 0..<12, using: &random) == 0 { return randomValue(&random) }
        var keys = fields.shuffled(using: &random).prefix(Int.random(in: 0...8, using: &random)).map { $0 }
        if Int.random(in: 0..<15, using: &random) == 0, let first = keys.first { keys.append(first) }  // a duplicate key
        let spaces = [" ", "", "\n  ", "\t"]
        return "{"
            + keys.map { key in
                spaces.randomElement(using: &random)! + "\"\(key)\"" + spaces.randomElement(using: &random)! + ":" + randomValue(&random)
            }.joined(separator: ",") + "}"
    }

    /// A series' fields, an unknown key and near misses.
    static let seriesFields = ["type", "unit", "start", "source", "intervalMs", "values", "value", "interval", "Values", "extra"]

    /// Mostly the usual shape (numbers and nulls), sometimes anything.
    static func randomValues(_ random: inout SplitMix64) -> String {
        guard Int.random(in: 0..<6, using: &random) > 0 else { return randomValue(&random) }
        return "["
            + (0..<Int.random(in: 0...6, using: &random)).map { _ in
                Int.random(in: 0..<5, using: &random) == 0
                    ? "null" : Int.random(in: 0..<8, using: &random) == 0 ? randomValue(&random) : String(Int.random(in: 20...220, using: &random))
            }.joined(separator: ", ") + "]"
    }

    static func randomSeries(_ random: inout SplitMix64) -> String {
        if Int.random(in: 0..<12, using: &random) == 0 { return randomValue(&random) }
        var keys = seriesFields.shuffled(using: &random).prefix(Int.random(in: 0...7, using: &random)).map { $0 }
        if Int.random(in: 0..<15, using: &random) == 0, let first = keys.first { keys.append(first) }  // a duplicate key
        return "{"
            + keys.map { key in
                let value =
                    switch key {
                    case "values": randomValues(&random)
                    case "intervalMs" where Int.random(in: 0..<3, using: &random) > 0: String(Int.random(in: -5...100_000, using: &random))
                    default: randomValue(&random)
                    }
                return "\"\(key)\": " + value
            }.joined(separator: ", ") + "}"
    }

    @Test func agreesOnRandomUploads() throws {
        var random = SplitMix64(seed: 20_261_121)
        var fastPathTaken = 0, seriesRead = 0
        let cases = 4000
        for _ in 0..<cases {
            let items = (0..<Int.random(in: 0...5, using: &random)).map { _ in Self.randomItem(&random) }
            let series = (0..<Int.random(in: 0...3, using: &random)).map { _ in Self.randomSeries(&random) }
            var fields: [String] = []
            switch Int.random(in: 0..<4, using: &random) {
            case 0: fields = [#""series": ["# + series.joined(separator: ", ") + "]"]
            case 1: fields = [#""items": ["# + items.joined(separator: ", ") + "]", #""series": ["# + series.joined(separator: ", ") + "]"]
            default: fields = [#""items": ["# + items.joined(separator: ", ") + "]"]
            }
            if Int.random(in: 0..<4, using: &random) == 0 { fields.append(#""note": {"a": [1, 2]}"#) }
            let body = "{" + fields.shuffled(using: &random).joined(separator: ", ") + "}"
            let bytes = ByteBuffer(string: body)
            let slow = try? WireFormat.decoder().decode(IngestUploadBody.self, from: Data(body.utf8)).raw
            guard let fast = UploadScanner.scan(bytes) else { continue }
            fastPathTaken += 1
            if !fast.series.isEmpty { seriesRead += 1 }
            #expect(slow == fast, "\(body)")
        }
        #expect(fastPathTaken > cases / 10)
        #expect(seriesRead > cases / 50)
    }

    /// The scanner reads strings eight bytes at a time: an escape, a control character, a
    /// character beyond ASCII or bytes that are not UTF-8 at any position of a string — a value
    /// or an unknown key (skipped) — near the body's end (where the last bytes are read one by
    /// one) or far from it, must leave the answer Foundation's. Plain text of any length is read
    /// by the scanner itself.
    @Test func stringsReadEightBytesAtATimeEndWhereFoundationsDo() throws {
        let specials: [[UInt8]] = [
            Array(#"\""#.utf8), Array(#"\n"#.utf8), Array(#"\u0041"#.utf8), [0x01], [0x09], [0x1F], [0x7F], Array("é".utf8), Array("☕".utf8),
            [0xFF], [0xC3], [0xE2, 0x98],
        ]
        let padding = Array(#","note":"________________________""#.utf8)
        var checked = 0
        for field in ["id", "source", "start", "an unknown key"] {
            for suffix in [Array(#""}]}"#.utf8), Array(#"""#.utf8) + padding + Array("}]}".utf8)] {
                func body(_ text: [UInt8]) -> [UInt8] {
                    let start = Array(#"{"items":[{"type":"heartRate","value":72,""#.utf8)
                    return field == "an unknown key"
                        ? start + Array("x".utf8) + text + Array(#"":"#.utf8) + Array(#""y"#.utf8) + suffix
                        : start + Array(field.utf8) + Array(#"":""#.utf8) + text + suffix
                }
                for length in 0...20 {
                    let plain = Array(repeating: UInt8(ascii: "a"), count: length)
                    let fast = try #require(UploadScanner.scan(ByteBuffer(bytes: body(plain))), "\(String(decoding: body(plain), as: UTF8.self))")
                    #expect(fast == (try WireFormat.decoder().decode(IngestUploadBody.self, from: Data(body(plain))).raw))
                    for position in 0...length {
                        for special in specials {
                            var text = plain
                            text.insert(contentsOf: special, at: position)
                            let slow = try? WireFormat.decoder().decode(IngestUploadBody.self, from: Data(body(text))).raw
                            if let fast = UploadScanner.scan(ByteBuffer(bytes: body(text))) {
                                #expect(fast == slow, "\(String(decoding: body(text), as: UTF8.self))")
                            }
                            checked += 1
                        }
                    }
                }
            }
        }
        #expect(checked == 4 * 2 * (1...21).reduce(0, +) * 12)
    }

    @Test func readsTheUsualUploadAndDeclinesTheRest() throws {
        let usual = ByteBuffer(
            string:
                #"{"items":[{"id":"a","type":"heartRate","value":72,"unit":"bpm","start":"2026-11-21T08:30:00Z"},{"latitude":45.5,"longitude":9.2,"time":"2026-11-21T08:30:00Z"},{"type":"sleep","value":"deep","start":"2026-11-21T01:00:00Z","end":"2026-11-21T02:00:00Z"},{"value":true},7]}"#
        )
        let items = try #require(UploadScanner.scan(usual)?.items)
        #expect(items.count == 5)
        #expect(items[0].id == "a" && items[0].value == .number(72) && items[0].unit == "bpm")
        #expect(items[1].latitude == 45.5 && items[1].time == "2026-11-21T08:30:00Z")
        #expect(items[2].value == .word("deep"))
        #expect(items[3].fieldError == "value must be a number (or a word for sleep)")
        #expect(items[4].fieldError == "item must be a JSON object")
        let series = try #require(
            UploadScanner.scan(
                ByteBuffer(
                    string: #"{"series":[{"type":"heartRate","start":"2026-11-21T08:30:00Z","intervalMs":1000,"values":[72,null,73.5],"x":[1]}]}"#)
            )?.series)
        #expect(series.count == 1 && series[0].values == [72, nil, 73.5] && series[0].intervalMs == 1000 && series[0].fieldError == nil)
        // Every type's name is read as that type from the bytes; near misses are names of none.
        for type in SampleType.allCases {
            let body = ByteBuffer(string: #"{"items":[{"type":"\#(type.rawValue)"}]}"#)
            #expect(UploadScanner.scan(body)?.items.first?.type == .known(type))
        }
        for name in ["heartrate", "heartRat", "heartRateX", "", "sleepy", "bodyMas", "café"] {
            let body = ByteBuffer(string: #"{"items":[{"type":"\#(name)"}]}"#)
            #expect(UploadScanner.scan(body)?.items.first?.type == .unknown(name))
        }
        for unusual in [
            #"{"series": [{"values": [1, "2"]}]}"#, #"{"series": [{"type": 1}]}"#, #"{"series": [7]}"#,
            #"{"series": [{"values": [1], "values": [2]}]}"#,
            #"[]"#, #"{"items": [{"type": "a\"b"}]}"#, #"{"items": [1,]}"#, #"{"items": []} x"#, #"{"items": [{"type": "x", "type": "y"}]}"#,
            #"{"other": 1}"#,
        ] {
            #expect(UploadScanner.scan(ByteBuffer(string: unusual)) == nil, "\(unusual)")
        }
    }
}
