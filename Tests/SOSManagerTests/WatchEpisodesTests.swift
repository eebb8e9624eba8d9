import Data4HelpCore
import DatabaseLink
import Foundation
import HealthSharing
import SOSManager
import SeededRandom
import Testing

@Suite("WatchEpisodes: each condition kind at its edges")
struct WatchEpisodesTests {
    /// 2026-11-16T12:00:00Z.
    static let now: Int64 = 1_795_348_800_000
    static let minute: Int64 = 60_000

    /// A heart-rate reading `minutesAgo` before now.
    static func reading(_ minutesAgo: Double, _ value: Float, key: Int64 = 0) -> StoredReading {
        StoredReading(typeCode: 1, timeMs: now - Int64(minutesAgo * 60_000), value: value, key: key)
    }

    static func finder(
        _ comparison: WatchComparison, _ persistence: WatchPersistence, hours: ActiveHours? = nil, zone: String = "UTC"
    ) -> WatchEpisodes {
        WatchEpisodes(comparison: comparison, persistence: persistence, activeHours: hours, timeZone: TimeZone(identifier: zone)!)
    }

    /// Episodes with every reading counted as new, evaluated at `receivedAtMs`.
    static func episodes(
        _ finder: WatchEpisodes, _ readings: [StoredReading], new: [StoredReading]? = nil, at receivedAtMs: Int64 = now
    ) -> [WatchEpisode] {
        let sorted = readings.sorted { ($0.timeMs, $0.key) < ($1.timeMs, $1.key) }
        return finder.episodes(in: sorted, new: Set((new ?? readings).map(\.identity)), receivedAtMs: receivedAtMs)
    }

    /// The detector skips the read when no new reading meets a rule's condition: for runs of
    /// readings (consecutive, sustained) that must never lose an episode.
    @Test(arguments: 0..<300) func noNewReadingMeetingTheConditionMeansNoEpisode(seed: Int) {
        var random = SplitMix64(seed: UInt64(seed) &+ 0x51_7CC1_B727_220A)
        let persistence: WatchPersistence =
            Bool.random(using: &random)
            ? .consecutive(Int.random(in: 1...4, using: &random)) : .sustained(milliseconds: Int64.random(in: 1...20, using: &random) * Self.minute)
        let comparison: WatchComparison = Bool.random(using: &random) ? .below(40) : .outside(low: 40, high: 120)
        let rule = Self.finder(comparison, persistence)
        let readings = (0..<Int.random(in: 1...40, using: &random)).map { index in
            Self.reading(
                Double(index) * Double.random(in: 0.5...3, using: &random), [30, 35, 60, 80, 130].randomElement(using: &random)!, key: Int64(index))
        }
        let new = readings.filter { _ in Bool.random(using: &random) }
        let episodes = Self.episodes(rule, readings, new: new)
        if !rule.mayFindEpisodes(with: new) { #expect(episodes.isEmpty) }
        #expect(episodes.allSatisfy { $0.readings.allSatisfy { comparison.isMet(by: $0.value) } })
    }

    @Test func consecutiveNeedsExactlyN() {
        let rule = Self.finder(.below(40), .consecutive(3))
        #expect(Self.episodes(rule, [Self.reading(3, 38), Self.reading(2, 37)]).isEmpty)  // N − 1
        let three = Self.episodes(rule, [Self.reading(3, 38), Self.reading(2, 37), Self.reading(1, 36)])
        #expect(three.count == 1 && three.first?.readings.count == 3)
        // A normal reading in between breaks the run.
        #expect(Self.episodes(rule, [Self.reading(4, 38), Self.reading(3, 37), Self.reading(2, 60), Self.reading(1, 36)]).isEmpty)
        // Three hours without a reading end a run.
        #expect(Self.episodes(rule, [Self.reading(400, 38), Self.reading(2, 37), Self.reading(1, 36)]).isEmpty)
        #expect(Self.episodes(rule, [Self.reading(170, 38), Self.reading(2, 37), Self.reading(1, 36)]).count == 1)
        // Equal to the bound is not below it.
        #expect(Self.episodes(rule, [Self.reading(3, 40), Self.reading(2, 40), Self.reading(1, 40)]).isEmpty)
    }

    @Test func aLateReadingCompletesOrBreaksAnEpisode() {
        let rule = Self.finder(.above(180), .consecutive(3))
        let stored = [Self.reading(3, 200), Self.reading(1, 210)]
        // The missing middle reading arrives late and completes the run…
        let late = Self.reading(2, 190)
        #expect(Self.episodes(rule, stored + [late], new: [late]).first?.readings.count == 3)
        // …or, normal, it sits between them and there is no run of three.
        let normal = Self.reading(2, 120)
        let third = Self.reading(0.5, 220)
        #expect(Self.episodes(rule, stored + [normal, third], new: [third]).isEmpty)
    }

    @Test func anEpisodeNeedsANewRecentReading() {
        let rule = Self.finder(.below(40), .consecutive(2))
        let old = [Self.reading(3, 30), Self.reading(2, 31)]
        let fresh = Self.reading(1, 32)
        // Re-evaluating stored readings alone raises nothing: the upload must have stored one of them.
        #expect(Self.episodes(rule, old + [fresh], new: [fresh]).count == 1)
        #expect(Self.episodes(rule, old + [Self.reading(1, 80)], new: [Self.reading(1, 80)]).isEmpty)
        // History: the newest reading of the episode is older than five minutes when it arrives.
        let yesterday = [Self.reading(1440, 30), Self.reading(1439, 31)]
        #expect(Self.episodes(rule, yesterday).isEmpty)
    }

    @Test func sustainedNeedsTheWholeDurationWithoutALongGap() {
        let rule = Self.finder(.below(40), .sustained(milliseconds: 20 * Self.minute))
        // Every 5 minutes from 20 minutes ago to now: 20 minutes exactly.
        let steady = stride(from: 20.0, through: 0, by: -5).map { Self.reading($0, 35) }
        #expect(Self.episodes(rule, steady).count == 1)
        // 19 minutes is not 20.
        let short = stride(from: 19.0, through: 0, by: -4.75).map { Self.reading($0, 35) }
        #expect(Self.episodes(rule, short).isEmpty)
        // A gap longer than 10 minutes (half of 20) leaves two runs, neither long enough.
        let gapped = [Self.reading(22, 35), Self.reading(18, 35), Self.reading(6, 35), Self.reading(0, 35)]
        #expect(Self.episodes(rule, gapped).isEmpty)
        // One normal reading in the middle breaks it.
        let broken = stride(from: 20.0, through: 0, by: -5).map { Self.reading($0, $0 == 10 ? 55 : 35) }
        #expect(Self.episodes(rule, broken).isEmpty)
        #expect(WatchEpisodes.maximumGapMs(sustaining: 20 * Self.minute) == 10 * Self.minute)
        #expect(WatchEpisodes.maximumGapMs(sustaining: 5 * Self.minute) == 5 * Self.minute)
        #expect(WatchEpisodes.maximumGapMs(sustaining: 240 * Self.minute) == 15 * Self.minute)
    }

    @Test func aggregatesOverATrailingWindowThatIsAtLeastHalfFull() {
        let average = Self.finder(.above(180), .aggregate(.average, windowMs: 30 * Self.minute))
        // 30 minutes of readings averaging 190 (one of them normal).
        let readings = [Self.reading(30, 200), Self.reading(20, 150), Self.reading(10, 200), Self.reading(0, 210)]
        let found = Self.episodes(average, readings)
        #expect(found.count == 1)
        // Two windows meet it: the one ending 10 minutes ago (200, 150, 200 → 183.3) and the one
        // ending now (150, 200, 210 → 186.7; the reading 30 minutes ago is out). The one ending 20
        // minutes ago does not (200, 150 → 175). The episode is the readings of both windows.
        #expect(found.first?.readings.map(\.value) == [200, 150, 200, 210])
        // One high reading is not an average over 30 minutes.
        #expect(Self.episodes(average, [Self.reading(0, 250)]).isEmpty)
        // The median ignores one outlier: 150, 160, 400 → 160.
        let median = Self.finder(.above(180), .aggregate(.median, windowMs: 30 * Self.minute))
        #expect(Self.episodes(median, [Self.reading(20, 150), Self.reading(10, 160), Self.reading(0, 400)]).isEmpty)
        let maximum = Self.finder(.above(180), .aggregate(.max, windowMs: 30 * Self.minute))
        #expect(Self.episodes(maximum, [Self.reading(20, 150), Self.reading(10, 160), Self.reading(0, 400)]).count == 1)
    }

    @Test func outsideIsBelowLowOrAboveHigh() {
        let rule = Self.finder(.outside(low: 70, high: 180), .consecutive(1))
        #expect(Self.episodes(rule, [Self.reading(1, 69)]).count == 1)
        #expect(Self.episodes(rule, [Self.reading(1, 181)]).count == 1)
        #expect(Self.episodes(rule, [Self.reading(1, 70)]).isEmpty && Self.episodes(rule, [Self.reading(1, 180)]).isEmpty)
    }

    @Test func activeHoursAcrossMidnightAndADaylightSavingChange() throws {
        // Nights only, 22:00–07:00, in Rome.
        let nights = ActiveHours(fromMinute: 22 * 60, toMinute: 7 * 60)
        #expect(nights.contains(minuteOfDay: 23 * 60) && nights.contains(minuteOfDay: 0) && nights.contains(minuteOfDay: 6 * 60 + 59))
        #expect(!nights.contains(minuteOfDay: 7 * 60) && !nights.contains(minuteOfDay: 12 * 60) && !nights.contains(minuteOfDay: 21 * 60 + 59))
        let rule = Self.finder(.below(40), .consecutive(1), hours: nights, zone: "Europe/Rome")
        func at(_ iso: String) throws -> (StoredReading, Int64) {
            let date = try #require(ISO8601DateFormatter().date(from: iso))
            let ms = Int64(date.timeIntervalSince1970 * 1000)
            return (StoredReading(typeCode: 1, timeMs: ms, value: 30, key: 0), ms)
        }
        // 2026-03-29, the night clocks go forward in Rome: 05:30Z is 07:30 CEST (day), 04:30Z is 06:30 (night).
        let (day, dayMs) = try at("2026-03-29T05:30:00Z")
        #expect(Self.episodes(rule, [day], at: dayMs).isEmpty)
        let (night, nightMs) = try at("2026-03-29T04:30:00Z")
        #expect(Self.episodes(rule, [night], at: nightMs).count == 1)
        // The day before (CET, UTC+1) 05:30Z is 06:30 local: still night.
        let (before, beforeMs) = try at("2026-03-28T05:30:00Z")
        #expect(Self.episodes(rule, [before], at: beforeMs).count == 1)
        // 21:30Z in winter is 22:30 in Rome: night; 20:30Z is 21:30: not.
        let (late, lateMs) = try at("2026-11-16T21:30:00Z")
        #expect(Self.episodes(rule, [late], at: lateMs).count == 1)
        let (evening, eveningMs) = try at("2026-11-16T20:30:00Z")
        #expect(Self.episodes(rule, [evening], at: eveningMs).isEmpty)
    }

    @Test func conditionsInWords() {
        let settings = WatchRuleSettings(
            name: "Low", typeCode: 1, comparison: .below(40), persistence: .sustained(milliseconds: 20 * Self.minute), severity: .warning)
        #expect(WatchRuleWording.condition(of: settings, type: .heartRate) == "heart rate below 40 bpm for 20 minutes")
        var glucose = settings
        glucose.comparison = .outside(low: 70, high: 180)
        glucose.persistence = .consecutive(1)
        #expect(WatchRuleWording.condition(of: glucose, type: .bloodGlucose) == "blood glucose outside 70–180 mg/dL")
        glucose.persistence = .aggregate(.average, windowMs: 60 * Self.minute)
        #expect(WatchRuleWording.condition(of: glucose, type: .bloodGlucose) == "average blood glucose over 1 hour outside 70–180 mg/dL")
        var oxygen = settings
        oxygen.comparison = .below(90)
        oxygen.persistence = .consecutive(3)
        #expect(WatchRuleWording.condition(of: oxygen, type: .oxygenSaturation) == "oxygen saturation below 90% in 3 readings in a row")
    }
}
