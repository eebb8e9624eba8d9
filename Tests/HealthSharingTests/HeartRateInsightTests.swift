import Data4HelpCore
import Foundation
import Testing

@testable import HealthSharing

/// Heart-rate dynamic profiles, zones, resting heart rate and elevation against hand-computed
/// answers on constructed series (issue 25).
@Suite("Heart-rate insights on constructed series")
struct HeartRateInsightTests {
    /// One reading a second from `start` seconds: `values[i]` at `start + i`.
    static func series(_ values: [Double], start: Int64 = 0, everyMs: Int64 = 1_000) -> [HeartRatePoint] {
        values.enumerated().map { HeartRatePoint(timeMs: start * 1_000 + Int64($0.offset) * everyMs, bpm: $0.element) }
    }

    /// `count` readings rising evenly from `from` to `to`.
    static func ramp(_ from: Double, _ to: Double, count: Int) -> [Double] {
        (0..<count).map { from + (to - from) * Double($0) / Double(count - 1) }
    }

    // MARK: Profiles

    @Test func aRiseOfExactlyTwentySecondsIsAProfileAndNineteenIsNot() {
        let twenty = HeartRateProfiles.find(in: Self.series(Self.ramp(100, 120, count: 21)), maximum: 180)
        #expect(twenty.count == 1)
        #expect(twenty.first?.startMs == 0 && twenty.first?.endMs == 20_000)
        #expect(twenty.first?.startBpm == 100 && twenty.first?.endBpm == 120 && twenty.first?.risePercent == 20)
        #expect(twenty.first?.slope == 1)
        #expect(HeartRateProfiles.find(in: Self.series(Self.ramp(100, 120, count: 20)), maximum: 180).isEmpty)
    }

    @Test func oneLowerReadingEndsTheRise() {
        var values = Self.ramp(100, 130, count: 31)
        #expect(HeartRateProfiles.find(in: Self.series(values), maximum: 180).count == 1)
        values[15] = values[14] - 1  // one reading dips: 0–14 s and 15–30 s, both under 20 s
        #expect(HeartRateProfiles.find(in: Self.series(values), maximum: 180).isEmpty)
        // Equal is not a fall: a plateau inside the rise keeps it one profile.
        var plateau = Self.ramp(100, 130, count: 31)
        plateau[15] = plateau[14]
        #expect(HeartRateProfiles.find(in: Self.series(plateau), maximum: 180).count == 1)
    }

    @Test func theRiseMustBeTenPerCent() {
        #expect(HeartRateProfiles.find(in: Self.series(Self.ramp(100, 109.9, count: 21)), maximum: 180).isEmpty)
        #expect(HeartRateProfiles.find(in: Self.series(Self.ramp(100, 110, count: 21)), maximum: 180).count == 1)
        #expect(HeartRateProfiles.find(in: Self.series(Self.ramp(1_000, 1_099, count: 21)), maximum: 1_800).isEmpty)  // 9.9 %
    }

    @Test func theEndMustBeAboveHalfTheMaximum() {
        // Maximum 200: half is 100. Ending exactly at it is not above it.
        #expect(HeartRateProfiles.find(in: Self.series(Self.ramp(90, 100, count: 21)), maximum: 200).isEmpty)
        #expect(HeartRateProfiles.find(in: Self.series(Self.ramp(90, 100.5, count: 21)), maximum: 200).count == 1)
    }

    @Test func aGapBetweenReadingsEndsTheRise() {
        let before = Self.series(Self.ramp(100, 110, count: 11))
        let after = Self.series(Self.ramp(111, 125, count: 15), start: 16)  // 6 s without a reading
        #expect(HeartRateProfiles.find(in: before + after, maximum: 180).isEmpty)
        let joined = before + Self.series(Self.ramp(111, 125, count: 15), start: 15)  // 5 s: still one
        #expect(HeartRateProfiles.find(in: joined, maximum: 180).count == 1)
    }

    @Test func theCurveIsRescaledToOneHundredPointsAndRecoveryIsMeasured() throws {
        let rise = Self.series(Self.ramp(100, 140, count: 41))
        let fall = Self.series([135, 130, 128, 126], start: 41)
        let profile = try #require(HeartRateProfiles.find(in: rise + fall, maximum: 180).first)
        #expect(profile.curve.count == 100 && profile.curve.first == 100 && profile.curve.last == 140)
        #expect(profile.curve == profile.curve.sorted())
        #expect(abs(profile.curve[50] - (100 + 40 * 50.0 / 99)) < 0.06)
        #expect(profile.recoveryBpm == 14)
    }

    // MARK: Zones

    @Test func zonesAndUnmeasuredTimeAddUpToTheWorkout() {
        // Maximum 200: a minute in each zone at 1 Hz, then a minute without readings.
        let levels: [Double] = [110, 130, 150, 170, 190]
        let values: [Double] = levels.flatMap { Array(repeating: $0, count: 60) }
        let zones = HeartRateZones.of(Self.series(values), startMs: 0, endMs: 360_000, maximum: 200)
        // Each reading holds until the next; the last one 5 s (the gap limit), so zone 5 has 64 s
        // and 56 s of the last minute are unmeasured.
        #expect(zones.seconds == [60, 60, 60, 60, 64])
        #expect(zones.unmeasuredSeconds == 56)
        #expect(zones.seconds.reduce(0, +) + zones.unmeasuredSeconds == 360)
        // Bounds belong to the zone above: 60 % of 200 is zone 2.
        #expect(HeartRateZones.zone(of: 120, maximum: 200) == 1 && HeartRateZones.zone(of: 119.9, maximum: 200) == 0)
        #expect(HeartRateZones.zone(of: 180, maximum: 200) == 4 && HeartRateZones.zone(of: 60, maximum: 200) == 0)
        // Sparse readings (every 10 s) hold 5 s each.
        let sparse = HeartRateZones.of(Self.series([150, 150, 150], everyMs: 10_000), startMs: 0, endMs: 30_000, maximum: 200)
        #expect(sparse.seconds[2] == 15 && sparse.unmeasuredSeconds == 15)
    }

    // MARK: Resting heart rate

    /// Readings every `everyMs` over six hours at `bpm`, with `changes` (minute → bpm) applied.
    static func night(
        bpm: Double, everyMs: Int64 = 60_000, hours: Int64 = 6, changes: [Int64: Double] = [:], skipping: ClosedRange<Int64>? = nil
    )
        -> [HeartRatePoint]
    {
        stride(from: Int64(0), to: hours * 3_600_000, by: Int(everyMs)).compactMap { time in
            let minute = time / 60_000
            if let skipping, skipping.contains(minute) { return nil }
            return HeartRatePoint(timeMs: time, bpm: changes[minute] ?? bpm)
        }
    }

    @Test func theLowestSustainedFiveMinutesIsTheRestingRate() throws {
        #expect(RestingHeartRate.lowestSustainedMean(Self.night(bpm: 52))?.bpm == 52)
        // Five minutes at 45 (minutes 100–104): exactly one window holds only those.
        let dip = Self.night(bpm: 52, changes: Dictionary(uniqueKeysWithValues: (Int64(100)...104).map { ($0, 45.0) }))
        let found = try #require(RestingHeartRate.lowestSustainedMean(dip))
        #expect(found.bpm == 45 && found.startMs == 100 * 60_000)
        // One low reading is not sustained: the best window holds it a minute of five.
        let single = try #require(RestingHeartRate.lowestSustainedMean(Self.night(bpm: 52, changes: [100: 40])))
        #expect(abs(single.bpm - (40.0 + 4 * 52) / 5) < 1e-9)
        // The same at one reading a second.
        #expect(RestingHeartRate.lowestSustainedMean(Self.night(bpm: 48, everyMs: 1_000, hours: 1))?.bpm == 48)
    }

    @Test func nightsWithGapsLeaveOutTheWindowsAcrossThem() throws {
        // A low reading right before twenty minutes without readings: its window spans the gap.
        let gapped = Self.night(bpm: 55, changes: [99: 40], skipping: 100...119)
        let found = try #require(RestingHeartRate.lowestSustainedMean(gapped))
        #expect(found.bpm > 51)  // 40 never holds five minutes; the best windows before it mix 55s with one 40
        #expect(abs(found.bpm - (40.0 + 4 * 55) / 5) < 1e-9 || found.bpm == 55)
        // Readings every 12 minutes hold nothing long enough: no resting rate.
        #expect(RestingHeartRate.lowestSustainedMean(Self.night(bpm: 50, everyMs: 720_000)) == nil)
        // A night cut short before five minutes of readings: none either.
        #expect(RestingHeartRate.lowestSustainedMean(Self.night(bpm: 50, hours: 1).prefix(4).map { $0 }) == nil)
    }

    @Test func aNightIsMidnightToSixAndTheSleepAroundIt() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "Europe/Rome"))
        let day = try #require(calendar.date(from: DateComponents(year: 2026, month: 11, day: 20)))
        let ms = { (hour: Double) in day.epochMilliseconds + Int64(hour * 3_600_000) }
        #expect(RestingHeartRate.night(of: day, calendar: calendar, sleep: []).map { [$0.startMs, $0.endMs] } == [[ms(0), ms(6)]])
        let slept = RestingHeartRate.night(of: day, calendar: calendar, sleep: [(ms(-1.5), ms(7.5)), (ms(13), ms(14))])
        #expect(slept.map { [$0.startMs, $0.endMs] } == [[ms(-1.5), ms(7.5)]])  // the nap after noon is not the night
    }

    // MARK: Workouts

    @Test func elevationGainIgnoresNoiseAndCountsEachClimb() {
        let climbs = (0...10).map(Double.init) + (0...9).reversed().map(Double.init) + (1...5).map(Double.init)
        #expect(WorkoutAnalysis.elevationGain(climbs) == 15)
        #expect(WorkoutAnalysis.elevationGain([100, 101, 100, 101.5, 100, 101, 100]) == 0)
        #expect(WorkoutAnalysis.elevationGain([]) == nil)
    }

    @Test func anAnalysisHasDistancePaceZonesAndProfiles() throws {
        let start = Date(timeIntervalSince1970: 1_790_000_000)
        let workout = Workout(
            sequence: 1, id: UUID(), activity: "running", start: start, end: start.addingTimeInterval(60), distanceMetres: nil,
            energyKilocalories: nil, averageHeartRate: nil, maximumHeartRate: nil, source: nil, importId: nil, runId: nil)
        let heart = Self.series(Self.ramp(100, 150, count: 61), start: 1_790_000_000)
        // Due north 0.001° a second: about 111.2 m a second, 6,672 m in a minute.
        var route: [(timeMs: Int64, latitude: Double, longitude: Double, altitude: Double?)] = []
        for second in 0...60 {
            route.append((timeMs: (1_790_000_000 + Int64(second)) * 1_000, latitude: 45 + Double(second) * 0.001, longitude: 9.0, altitude: nil))
        }
        let analysis = WorkoutAnalysis.of(workout, heartRate: heart, route: route, maximum: MaximumHeartRate(bpm: 200, source: .measured))
        #expect(abs((analysis.distanceMetres ?? 0) - 6_671.7) < 1)
        #expect(abs((analysis.paceSecondsPerKilometre ?? 0) - 60 / 6.6717) < 0.01)
        #expect(analysis.elevationGainMetres == nil && analysis.readings == 61)
        #expect(analysis.zones.seconds.reduce(0, +) + analysis.zones.unmeasuredSeconds == 60)
        #expect(analysis.profiles.count == 1 && analysis.profiles[0].endBpm == 150)
        #expect(analysis.maximumHeartRateReached == 150 && analysis.averageHeartRate == 125)
    }
}
