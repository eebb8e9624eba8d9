import DatabaseLink
import SOSManager
import SeededRandom
import Testing

@Suite("ReadingWindow: one read around an upload serves AutomatedSOS and every rule")
struct ReadingWindowTests {
    static func reading(_ timeMs: Int64, key: Int64) -> StoredReading {
        StoredReading(typeCode: 5, timeMs: timeMs, value: 60, key: key)
    }

    @Test func theNearestReadingsEachSideAndAllBetween() {
        let all = [0, 60_000, 120_000, 180_000, 240_000, 300_000].enumerated().map { Self.reading(Int64($0.element), key: Int64($0.offset)) }
        let window = ReadingWindow(fromMs: 120_000, toMs: 180_000, extra: 1)
        #expect(window.cut(all).map(\.timeMs) == [60_000, 120_000, 180_000, 240_000])
        #expect(ReadingWindow(fromMs: 120_000, toMs: 180_000, extra: 0).cut(all).map(\.timeMs) == [120_000, 180_000])
        #expect(ReadingWindow(fromMs: 10_000, toMs: 20_000, extra: 2).cut(all).map(\.timeMs) == [0, 60_000, 120_000])
    }

    @Test func readingsMoreThanADayAwayAreNotContext() {
        let day: Int64 = 86_400_000
        let all = [Self.reading(0, key: 0), Self.reading(day + 120_000, key: 1), Self.reading(3 * day, key: 2)]
        #expect(ReadingWindow(fromMs: day + 120_000, toMs: day + 120_000, extra: 5).cut(all).map(\.key) == [1])
    }

    /// The claim the detector rests on: cutting each evaluator's window out of one read of the
    /// window covering them all gives what reading that window alone would have.
    @Test(arguments: 0..<300) func aCoveringReadHoldsEveryWindow(seed: Int) throws {
        var random = SplitMix64(seed: UInt64(seed) &+ 17)
        var time: Int64 = 1_800_000_000_000
        var all: [StoredReading] = []
        for key in 0..<Int.random(in: 0...60, using: &random) {
            time += [0, 1_000, 30_000, 300_000, 3_600_000, 90_000_000].randomElement(using: &random)!
            all.append(Self.reading(time, key: Int64(key)))
        }
        let newFrom = 1_800_000_000_000 + Int64.random(in: 0...20_000_000, using: &random)
        let newTo = newFrom + Int64.random(in: 0...3_600_000, using: &random)
        let windows = (0..<Int.random(in: 1...4, using: &random)).map { _ in
            let context = Int64.random(in: 0...7_200_000, using: &random)
            return ReadingWindow(fromMs: newFrom - context, toMs: newTo + context, extra: Int.random(in: 0...6, using: &random))
        }
        let covering = try #require(ReadingWindow(covering: windows))
        let read = covering.cut(all)
        for window in windows {
            #expect(window.cut(read) == window.cut(all))
        }
    }
}
