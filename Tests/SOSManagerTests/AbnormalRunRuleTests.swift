import Data4HelpCore
import DatabaseLink
import Foundation
import HealthSharing
import SOSManager
import SeededRandom
import Testing

@Suite("AbnormalRunRule: the design's counter over stored readings")
struct AbnormalRunRuleTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func thresholds(_ readings: [StoredReading], consecutive: Int = 3, max: Float? = nil, oxygen: Float? = nil) -> MonitoredReadings {
        MonitoredReadings(
            minHeartRate: 40, maxHeartRate: max, minOxygenSaturation: oxygen, consecutiveReadings: consecutive, cancelWindowSeconds: 0,
            readings: readings.sorted { ($0.timeMs, $0.key) < ($1.timeMs, $1.key) }
        )
    }

    static func reading(_ second: Int, _ value: Float, key: Int64? = nil) -> StoredReading {
        StoredReading(
            typeCode: SampleType.heartRate.storageCode, timeMs: now.epochMilliseconds - 60_000 + Int64(second) * 1000, value: value,
            key: key ?? Int64(second))
    }

    @Test func theNthConsecutiveAbnormalReadingMakesAnEmergencyAndANormalOneResets() {
        let readings = [35, 35, 70, 35, 35, 35].enumerated().map { Self.reading($0.offset, Float($0.element)) }
        let rule = AbnormalRunRule(Self.thresholds(readings))
        let all = Set(readings.map(\.identity))
        let runs = rule.emergencies(type: .heartRate, new: all, receivedAt: Self.now)
        #expect(runs.map { $0.readings.map(\.timeMs) } == [readings[3...].map(\.timeMs)])
        // N − 1 then a normal one: nothing.
        let short = AbnormalRunRule(Self.thresholds(Array(readings[0...2])))
        #expect(short.emergencies(type: .heartRate, new: all, receivedAt: Self.now).isEmpty)
    }

    @Test func onlyRunsThatContainANewReadingAndAreRecentCount() {
        let readings = (0..<4).map { Self.reading($0, 30) }
        let rule = AbnormalRunRule(Self.thresholds(readings))
        #expect(rule.emergencies(type: .heartRate, new: [], receivedAt: Self.now).isEmpty)
        #expect(rule.emergencies(type: .heartRate, new: [readings[3].identity], receivedAt: Self.now).count == 1)
        let later = Self.now.addingTimeInterval(AbnormalRunRule.maximumReadingAge + 120)
        #expect(rule.emergencies(type: .heartRate, new: [readings[3].identity], receivedAt: later).isEmpty)
    }

    @Test func maximumHeartRateAndOxygenSaturationAreThresholdsToo() {
        let rule = AbnormalRunRule(Self.thresholds([], max: 150, oxygen: 90))
        #expect(rule.isAbnormal(151, type: .heartRate) && !rule.isAbnormal(150, type: .heartRate) && rule.isAbnormal(39, type: .heartRate))
        #expect(rule.isAbnormal(89, type: .oxygenSaturation) && !rule.isAbnormal(90, type: .oxygenSaturation))
        #expect(!AbnormalRunRule(Self.thresholds([])).isAbnormal(50, type: .oxygenSaturation))  // no threshold set
        #expect(!rule.isAbnormal(10, type: .stepCount))
    }

    /// AutomatedSOS is the individual's emergency rule for each monitored type, found like any
    /// other consecutive rule: the same comparison, N readings, a three-hour gap ends a run.
    @Test func theThresholdsAreAnEmergencyRulePerMonitoredType() {
        let thresholds = SOSThresholds(minHeartRate: 40, maxHeartRate: 150, minOxygenSaturation: 90, consecutiveReadings: 3, cancelWindowSeconds: 0)
        let heart = thresholds.rule(for: .heartRate)
        #expect(heart?.comparison == .outside(low: 40, high: 150) && heart?.persistence == .consecutive(3) && heart?.severity == .emergency)
        #expect(thresholds.rule(for: .oxygenSaturation)?.comparison == .below(90))
        #expect(thresholds.rule(for: .stepCount) == nil)
        let minimumOnly = SOSThresholds(minHeartRate: 40, maxHeartRate: nil, minOxygenSaturation: nil, consecutiveReadings: 2, cancelWindowSeconds: 0)
        #expect(minimumOnly.rule(for: .heartRate)?.comparison == .below(40) && minimumOnly.rule(for: .oxygenSaturation) == nil)

        // Three low readings, the first four hours before the others: two runs, neither of three.
        let spread = [Self.reading(-4 * 3600, 30), Self.reading(-60, 30), Self.reading(-30, 30)]
        let rule = AbnormalRunRule(Self.thresholds(spread))
        #expect(rule.emergencies(type: .heartRate, new: Set(spread.map(\.identity)), receivedAt: Self.now).isEmpty)
        let close = [Self.reading(-2 * 3600, 30), Self.reading(-60, 30), Self.reading(-30, 30)]
        #expect(
            AbnormalRunRule(Self.thresholds(close)).emergencies(type: .heartRate, new: Set(close.map(\.identity)), receivedAt: Self.now).count == 1)
    }

    /// Whatever order readings arrive in, and however often they are resent, the emergencies are
    /// the ones the design's counter finds walking the distinct readings in time order.
    @Test(arguments: 0..<200) func arrivalOrderAndDuplicatesDoNotChangeTheOutcome(seed: Int) {
        var random = SplitMix64(seed: UInt64(seed) &+ 0x9E37_79B9_7F4A_7C15)
        let count = Int.random(in: 1...25, using: &random)
        let consecutive = Int.random(in: 1...5, using: &random)
        let readings = (0..<count).map { Self.reading($0, Bool.random(using: &random) ? 30 : 72) }
        // The counter of the design over the readings in time order: the N-th abnormal in a row triggers.
        var counter = 0, expected = 0
        for reading in readings {
            counter = reading.value < 40 ? counter + 1 : 0
            if counter == consecutive { expected += 1 }
        }
        // Stored as the database would hold them after any arrival order with resends: distinct, sorted.
        var arrivals = readings + readings.filter { _ in Bool.random(using: &random) }
        arrivals.shuffle(using: &random)
        var stored: [StoredReading] = []
        for reading in arrivals where !stored.contains(reading) { stored.append(reading) }
        let rule = AbnormalRunRule(Self.thresholds(stored, consecutive: consecutive))
        let runs = rule.emergencies(type: .heartRate, new: Set(stored.map(\.identity)), receivedAt: Self.now)
        #expect(runs.count == expected)
        #expect(runs.allSatisfy { $0.readings.count >= consecutive && $0.readings.allSatisfy { $0.value < 40 } })
    }
}
