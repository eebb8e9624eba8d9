import Testing

@testable import HealthSharing

/// An import's figures: refusals by reason, with their limits, and two batches' figures added up.
@Suite struct ImportFiguresTests {
    /// A file whose bad records each give another reason ("the value x7 is not a number"): the
    /// first 20 reasons are kept, the rest are counted under "other reasons" — this once recursed
    /// without end and ended the process.
    @Test func reasonsBeyondTheTwentiethAreCountedTogether() {
        var figures = ImportFigures()
        for n in 0..<25 { figures.reject("the value x\(n) is not a number", example: "heartRate x\(n)") }
        figures.reject("the value x3 is not a number", example: "heartRate x3 again")
        #expect(figures.rejected.count == 21)
        #expect(figures.rejected.last?.reason == "other reasons" && figures.rejected.last?.count == 5)
        #expect(figures.rejected.last?.examples == ["heartRate x20", "heartRate x21", "heartRate x22"])
        #expect(figures.rejected[3].count == 2 && figures.rejected[3].examples == ["heartRate x3", "heartRate x3 again"])
        #expect(figures.rejected.map(\.count).reduce(0, +) == 26)
    }

    /// Figures counted while the previous batch commits are added to the committed ones.
    @Test func mergingAddsEveryFigureWithinTheLimits() {
        var committed = ImportFigures()
        committed.types["heartRate"] = .init(accepted: 10, duplicates: 2)
        committed.skipped["HKQuantityTypeIdentifierFlightsClimbed"] = 4
        committed.workouts = 1
        for n in 0..<19 { committed.reject("reason \(n)", example: "a\(n)") }
        committed.reject("reason 0", example: "b0")
        var later = ImportFigures()
        later.types["heartRate"] = .init(accepted: 5, duplicates: 1)
        later.types["sleep"] = .init(accepted: 3, duplicates: 0)
        later.skipped["HKQuantityTypeIdentifierFlightsClimbed"] = 1
        later.workouts = 2
        for _ in 0..<3 { later.reject("reason 0", example: "c0") }
        later.reject("reason 19", example: "a19")
        later.reject("reason 20", example: "a20")
        later.reject("reason 21", example: "a21")
        committed.merge(later)
        #expect(committed.types["heartRate"] == .init(accepted: 15, duplicates: 3) && committed.types["sleep"]?.accepted == 3)
        #expect(committed.skipped == ["HKQuantityTypeIdentifierFlightsClimbed": 5] && committed.workouts == 3)
        #expect(committed.rejected[0].count == 5 && committed.rejected[0].examples == ["a0", "b0", "c0"])
        #expect(committed.rejected.count == 21 && committed.rejected[19].reason == "reason 19")
        #expect(committed.rejected[20].reason == "other reasons" && committed.rejected[20].count == 2)
    }
}
