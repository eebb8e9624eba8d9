import DatabaseLink
import HealthSharing
import Testing

/// The budget rule on its own, on ledgers written out by hand: what fits, which window refuses
/// first, and when a refused party may ask again.
@Suite("The privacy budget: rolling windows and retry-after")
struct PrivacyBudgetTests {
    static let hour: Int64 = 3_600_000, day: Int64 = 86_400_000
    static let now: Int64 = 1_800_000_000_000

    /// Default budget: 2.00 a day, 10.00 in 30 days.
    let budget = PrivacyBudget()

    @Test func aQueryThatFitsBothWindowsIsAllowed() {
        let ledger = BudgetLedger(spends: [(Self.now - 2 * Self.hour, 100)], nowMs: Self.now)
        #expect(budget.refusal(for: Epsilon(hundredths: 100), in: ledger) == nil)  // 1.00 + 1.00 = the day's 2.00
    }

    @Test func theDayRefusesUntilItsOldestSpendLeavesTheWindow() {
        // 1.50 spent 2 h ago and 0.50 spent 1 h ago: 0.60 more waits until the first leaves, 22 h on.
        let ledger = BudgetLedger(spends: [(Self.now - 2 * Self.hour, 150), (Self.now - Self.hour, 50)], nowMs: Self.now)
        #expect(budget.refusal(for: Epsilon(hundredths: 60), in: ledger) == BudgetRefusal(window: "day", retryAfter: 22 * 3_600))
        #expect(budget.refusal(for: Epsilon(hundredths: 1), in: ledger) == BudgetRefusal(window: "day", retryAfter: 22 * 3_600))
    }

    @Test func thirtyDaysRefuseWhenEachDayWasWithinItsOwn() {
        // 2.00 on each of the last five days (none today): the day has room, 30 days have none.
        let spends = (1...5).map { (atMs: Self.now - Int64($0) * Self.day - Self.hour, hundredths: 200) }
        let ledger = BudgetLedger(spends: spends.reversed(), nowMs: Self.now)
        let refusal = budget.refusal(for: Epsilon(hundredths: 50), in: ledger)
        #expect(refusal?.window == "30 days")
        // The oldest spend (5 days and an hour ago) leaves the 30-day window in 25 days less an hour.
        #expect(refusal?.retryAfter == Int((30 * Self.day - 5 * Self.day - Self.hour) / 1000))
        #expect(budget.spent(in: ledger).days30 == Epsilon(hundredths: 1_000) && budget.spent(in: ledger).day == Epsilon(hundredths: 0))
    }
}
