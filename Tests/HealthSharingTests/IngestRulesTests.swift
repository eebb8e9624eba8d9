import Foundation
import HealthSharing
import Testing

@Suite("Which uploaded items are refused, and why")
struct IngestRulesTests {
    let now = RFC3339Timestamp.parse("2026-11-21T12:00:00Z")!
    let rules = IngestRules()

    private func item(_ configure: (inout RawIngestItem) -> Void) -> RawIngestItem {
        var raw = RawIngestItem()
        raw.type = "heartRate"
        raw.value = .number(70)
        raw.start = "2026-11-21T11:00:00Z"
        configure(&raw)
        return raw
    }

    private func reason(_ raw: RawIngestItem) -> String? {
        do {
            _ = try rules.validate(raw, now: now)
            return nil
        } catch {
            return error.reason
        }
    }

    @Test func acceptsEveryTypeInItsCanonicalUnit() throws {
        for type in SampleType.allCases {
            let raw = item {
                $0.type = RawSampleType(type.rawValue)
                switch type.definition {
                case .quantity(let unit, _, let range):
                    $0.unit = unit
                    $0.value = .number((range.lowerBound + range.upperBound) / 2)
                case .category(let words):
                    $0.value = .word(words[0])
                }
                if type.isInterval { $0.end = "2026-11-21T11:30:00Z" }
            }
            #expect(reason(raw) == nil, "\(type)")
        }
    }

    @Test func futureSamplesAreRefusedButClockSkewIsTolerated() {
        #expect(reason(item { $0.start = "2026-11-21T12:04:00Z" }) == nil)
        #expect(reason(item { $0.start = "2026-11-21T12:06:00Z" }) == "start is in the future")
    }

    @Test func lateSamplesAreNormal() {
        #expect(reason(item { $0.start = "2026-11-14T12:00:00Z" }) == nil)
        #expect(reason(item { $0.start = "1999-12-31T23:59:59Z" }) == "start is before 2000-01-01")
    }

    @Test func intervalsAreChecked() {
        #expect(reason(item { $0.end = "2026-11-21T11:10:00Z" }) == "end is only for interval types such as stepCount")
        #expect(
            reason(
                item {
                    $0.type = "stepCount"; $0.end = "2026-11-21T10:00:00Z"
                }) == "end must not be before start")
        #expect(
            reason(
                item {
                    $0.type = "stepCount"; $0.start = "2026-11-19T10:00:00Z"; $0.end = "2026-11-21T10:00:00Z"
                }) == "an interval may cover at most 24 hours")
    }

    @Test func malformedItemsSayWhatIsWrong() {
        #expect(reason(item { $0.type = "mood" })?.hasPrefix("type must be one of") == true)
        #expect(reason(item { $0.value = nil }) == "value is required")
        #expect(reason(item { $0.start = "21/11/2026" })?.hasPrefix("start must be an RFC 3339 time") == true)
        #expect(reason(item { $0.start = "2026-11-21T11:00:00" })?.hasPrefix("start must be an RFC 3339 time") == true)
        #expect(reason(item { $0.id = "" }) == "id must be 1 to 128 characters")
        #expect(reason(RawIngestItem())?.hasPrefix("item is neither") == true)
        #expect(reason(item { $0.fieldError = "value must be a number" }) == "value must be a number")
    }

    /// Sources are names: printable, 1 to 200 characters (an emoji is one character of several bytes).
    @Test func sourcesAreNamesWithoutControlCharacters() {
        for control in ["\u{0}", "\n", "\u{1B}", "\u{7F}", "\u{85}", "\u{9F}"] {
            #expect(
                reason(item { $0.source = "Anna’s" + control + "Watch" }) == "source must not contain control characters",
                "\(control.unicodeScalars.first!.value)")
        }
        #expect(reason(item { $0.source = "Anna’s Apple Watch ⌚️ \u{A0}\u{200B}" }) == nil)
        #expect(reason(item { $0.source = String(repeating: "⌚️", count: 200) }) == nil)
        #expect(reason(item { $0.source = String(repeating: "⌚️", count: 201) }) == "source must be 1 to 200 characters")
        #expect(reason(item { $0.source = "" }) == "source must be 1 to 200 characters")
    }

    @Test func locationFixesAreChecked() {
        var fix = RawIngestItem()
        fix.latitude = 45
        fix.longitude = 9
        fix.time = "2026-11-21T11:00:00Z"
        #expect(reason(fix) == nil)
        fix.latitude = 91
        #expect(reason(fix) == "latitude must be between -90 and 90")
        fix.latitude = 45
        fix.accuracy = -1
        #expect(reason(fix) == "accuracy must be between 0 and 100000 m")
    }
}
