import Foundation
import HealthSharing
import Testing

@Suite("RFC 3339 timestamps")
struct RFC3339TimestampTests {
    @Test(arguments: [
        ("2026-11-21T08:30:00Z", 1_795_249_800.0),
        ("2026-11-21T09:30:00+01:00", 1_795_249_800.0),
        ("2026-11-21T03:00:00-05:30", 1_795_249_800.0),
        ("2026-11-21t08:30:00.250z", 1_795_249_800.25),
        ("2026-11-21 08:30:00.1239Z", 1_795_249_800.123),
        ("2000-02-29T00:00:00Z", 951_782_400.0),
        ("1970-01-01T00:00:00Z", 0.0),
    ])
    func parsesToTheInstant(text: String, epochSeconds: Double) throws {
        let date = try #require(RFC3339Timestamp.parse(text))
        #expect(abs(date.timeIntervalSince1970 - epochSeconds) < 0.0005)
    }

    @Test(arguments: [
        "2026-11-21T08:30:00", "2026-11-21", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-11-21T24:00:00Z",
        "2026-11-21T08:30:00.Z", "2026-11-21T08:30:00+0100", "2026-11-21T08:30:00Z trailing", "", "yesterday",
    ])
    func refusesWhatIsNotAnRFC3339Instant(_ text: String) {
        #expect(RFC3339Timestamp.parse(text) == nil)
    }

    @Test func agreesWithFoundationOnRandomInstants() throws {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        for _ in 0..<500 {
            let date = Date(timeIntervalSince1970: Double(Int.random(in: 946_684_800...4_102_444_800)))
            formatter.timeZone = TimeZone(secondsFromGMT: 60 * 15 * Int.random(in: -48...56))
            let text = formatter.string(from: date)
            #expect(RFC3339Timestamp.parse(text) == date, "\(text)")
        }
    }
}
