import Data4HelpCore
import Foundation
import Testing

/// Times on the wire keep their milliseconds: formatted from the stored epoch milliseconds
/// exactly, and agreeing with Foundation's own parser, before 1970 too.
@Suite struct WireTimestampTests {
    @Test func everyMillisecondIsWrittenAsItIs() throws {
        let parser = ISO8601DateFormatter()
        parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let starts: [Int64] = [1_795_539_600_000, 0, -1_000, -86_400_000 * 365 * 30, 951_782_400_000, 4_102_444_799_000]
        for start in starts {
            for milliseconds in start..<start + 1_500 {
                let text = WireFormat.timestamp(Date(timeIntervalSince1970: Double(milliseconds) / 1000))
                #expect(text == WireFormat.timestamp(milliseconds: milliseconds))
                #expect(text.hasSuffix(String(format: ".%03dZ", Int((milliseconds % 1000 + 1000) % 1000))), "\(milliseconds): \(text)")
                let parsed = try #require(parser.date(from: text), "\(text)")
                #expect(Int64((parsed.timeIntervalSince1970 * 1000).rounded()) == milliseconds, "\(text)")
            }
        }
        #expect(WireFormat.timestamp(milliseconds: 1_795_539_600_001) == "2026-11-24T17:00:00.001Z")
        #expect(WireFormat.timestamp(milliseconds: -1) == "1969-12-31T23:59:59.999Z")
        #expect(WireFormat.timestamp(milliseconds: 951_782_400_000) == "2000-02-29T00:00:00.000Z")
    }
}
