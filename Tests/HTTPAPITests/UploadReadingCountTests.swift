import Data4HelpCore
import Foundation
import HealthSharing
import NIOCore
import SeededRandom
import Testing

@testable import HTTPAPI

@Suite("An upload's readings are counted before it is decoded")
struct UploadReadingCountTests {
    static func count(_ body: String) -> Int? { UploadReadingCount.count(ByteBuffer(string: body)) }

    @Test func countsItemsAndSeriesValuesAsTheLimitDoes() {
        #expect(Self.count(#"{"items": [{}, 7, {"a": [1, {"b": 2}]}], "note": {"items": [1, 2, 3]}}"#) == 3)
        #expect(Self.count(#"{"series": [{"values": [1, null, 3]}, {"values": []}, {"type": "x"}, 7, {"values": 5}]}"#) == 7)
        // An escaped key is the key it spells; a repeated one counts every time.
        #expect(Self.count(#"{"\u0069tems": [{}, {}], "items": [{}]}"#) == 3)
        #expect(Self.count(#"{"series": [{"val\u0075es": [1, 2], "values": [3]}]}"#) == 3)
        #expect(Self.count(#"{"it\"ems": [{}], "items": "none"}"#) == 0)
        #expect(Self.count(#" [1, 2] "#) == 0)
        #expect(Self.count(#""text""#) == 0)
    }

    @Test func refusesWhatIsNotJSON() {
        for body in [
            #"{"items": [{},]}"#, #"{"items": [{}]"#, #"{"items": [{}]} x"#, #"{"a": "\x"}"#, "{\"a\": \"tab\u{09}in\"}", "",
            #"{"a": tru}"#, #"{"a": }"#, #"{"a": "\u12G4"}"#,
            String(repeating: "[", count: 70) + String(repeating: "]", count: 70),
        ] {
            #expect(Self.count(body) == nil, "\(body)")
        }
        #expect(Self.count(String(repeating: "[", count: 60) + String(repeating: "]", count: 60)) == 0)
    }

    /// On the scanner test's random bodies: never fewer readings than Foundation decodes (more
    /// only where a key repeats), and nil only for what Foundation cannot read either.
    @Test func neverCountsFewerThanTheDecoderFinds() throws {
        var random = SplitMix64(seed: 20_261_202)
        var decoded = 0, equal = 0
        for _ in 0..<3000 {
            let items = (0..<Int.random(in: 0...5, using: &random)).map { _ in UploadScannerTests.randomItem(&random) }
            let series = (0..<Int.random(in: 0...3, using: &random)).map { _ in UploadScannerTests.randomSeries(&random) }
            let body = #"{"items": ["# + items.joined(separator: ", ") + #"], "series": ["# + series.joined(separator: ", ") + "]}"
            let counted = Self.count(body)
            guard let upload = try? WireFormat.decoder().decode(IngestUploadBody.self, from: Data(body.utf8)).raw else {
                if counted == nil { #expect((try? JSONSerialization.jsonObject(with: Data(body.utf8))) == nil, "\(body)") }
                continue
            }
            decoded += 1
            let readings = try #require(counted, "\(body)")
            #expect(readings >= upload.readings, "\(body)")
            if readings == upload.readings { equal += 1 }
        }
        #expect(decoded > 1000 && equal > decoded * 9 / 10)
    }
}
