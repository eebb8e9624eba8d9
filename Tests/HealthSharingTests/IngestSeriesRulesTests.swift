import Foundation
import HealthSharing
import Testing

@Suite("A series' values become samples at their times, as items would")
struct IngestSeriesRulesTests {
    let now = RFC3339Timestamp.parse("2026-11-21T12:00:00Z")!
    let rules = IngestRules()

    private func series(_ configure: (inout RawSeries) -> Void = { _ in }) -> RawSeries {
        var raw = RawSeries()
        raw.type = "heartRate"
        raw.start = "2026-11-21T11:00:00+01:00"
        raw.intervalMs = 1_000
        raw.values = [70, nil, 72.5]
        configure(&raw)
        return raw
    }

    /// The item a client would have sent for the same reading.
    private func item(_ type: String, _ value: Double, start: String, end: String? = nil, unit: String? = nil) throws -> NewSample {
        var raw = RawIngestItem()
        raw.type = RawSampleType(type)
        raw.value = .number(value)
        raw.start = RawInstant(start)
        raw.end = end.map { RawInstant($0) }
        raw.unit = unit
        guard case .sample(let sample) = try rules.validate(raw, now: now) else { throw SampleRejection("not a sample") }
        return sample
    }

    @Test func eachValueIsTheSampleItsItemWouldBe() throws {
        let checked = rules.validate(series(), now: now)
        #expect(checked.refused.isEmpty)
        #expect(checked.samples.map(\.slot) == [0, 2])  // the null slot stores nothing
        #expect(checked.samples[0].sample == (try item("heartRate", 70, start: "2026-11-21T10:00:00Z")))
        #expect(checked.samples[1].sample == (try item("heartRate", 72.5, start: "2026-11-21T10:00:02Z")))
    }

    @Test func intervalTypesCoverTheirSlotInTheUnitSent() throws {
        let checked = rules.validate(
            series {
                $0.type = "distance"
                $0.unit = "km"
                $0.intervalMs = 60_000
                $0.values = [0.1, 0.25]
                $0.source = "Apple Watch"
            }, now: now)
        #expect(checked.refused.isEmpty)
        let expected = try item("distance", 0.25, start: "2026-11-21T10:01:00Z", end: "2026-11-21T10:02:00Z", unit: "km")
        #expect(checked.samples[1].sample.start == expected.start && checked.samples[1].sample.end == expected.end)
        #expect(checked.samples[1].sample.value == 250 && checked.samples[1].sample.key == expected.key)
        #expect(checked.samples[1].sample.source == "Apple Watch")
    }

    @Test func aValueOutOfRangeOrInTheFutureIsRefusedAlone() {
        let checked = rules.validate(
            series {
                $0.start = "2026-11-21T11:59:00Z"
                $0.intervalMs = 120_000
                $0.values = [70, 400, 71, 72, 73]  // 11:59, 12:01, 12:03, 12:05, 12:07: the last is past 5 minutes ahead
            }, now: now)
        #expect(checked.samples.map(\.slot) == [0, 2, 3])
        #expect(checked.refused.map(\.slot) == [1, 4])
        #expect(checked.refused[0].reason == "heartRate must be between 20 and 250 bpm")
        #expect(checked.refused[1].reason.contains("in the future"))
    }

    @Test func aSeriesWithABadHeaderIsRefusedWhole() {
        let cases: [(RawSeries, String)] = [
            (series { $0.type = "sleep" }, "sleep is sent as items"),
            (series { $0.type = "pulse" }, "type must be one of"),
            (series { $0.unit = "mg" }, "unit mg does not fit heartRate"),
            (series { $0.start = nil }, "start is required"),
            (series { $0.start = "2026-11-21 11:00" }, "start must be an RFC 3339 time"),
            (series { $0.start = "1999-12-31T23:00:00Z" }, "start is before 2000-01-01"),
            (series { $0.start = "2026-11-21T12:10:00Z" }, "start is in the future"),
            (series { $0.intervalMs = nil }, "intervalMs is required"),
            (series { $0.intervalMs = 0 }, "intervalMs must be a whole number"),
            (series { $0.intervalMs = 1.5 }, "intervalMs must be a whole number"),
            (series { $0.intervalMs = 86_400_001 }, "intervalMs must be a whole number"),
            (series { $0.intervalMs = .infinity }, "intervalMs must be a whole number"),
            (series { $0.values = [] }, "values must hold at least one value"),
            (series { $0.source = "" }, "source must be 1 to 200 characters"),
            (series { $0.fieldError = "values must be an array of numbers (null for an empty slot)" }, "values must be an array"),
        ]
        for (raw, expected) in cases {
            let checked = rules.validate(raw, now: now)
            #expect(checked.samples.isEmpty, "\(expected)")
            #expect(checked.refused.count == 1 && checked.refused[0].slot == nil, "\(expected)")
            #expect(checked.refused.first?.reason.contains(expected) == true, "\(checked.refused) for \(expected)")
        }
    }
}
