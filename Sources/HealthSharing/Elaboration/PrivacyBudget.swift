import DatabaseLink
import Foundation

/// The privacy budget of every third party, in ε, and its rules: how much one query may spend,
/// how much a party may spend in a rolling day and in rolling 30 days, and for how long the
/// same question gets its stored answer back instead of fresh noise (which would let noise be
/// averaged away). Decided on the party's ledger as `AggregateQueryStore.start` reads it under
/// the party's lock.
package struct PrivacyBudget: Sendable {
    package var perQuery = Epsilon(hundredths: 100)
    package var perDay = Epsilon(hundredths: 200)
    package var per30Days = Epsilon(hundredths: 1_000)
    /// ε of a query that does not say.
    package var defaultEpsilon = Epsilon(hundredths: 50)

    package init() {}

    /// A question asked again within this long gets its first answer back, at no cost.
    static let repeatWindow = Duration.seconds(30 * 86_400)
    /// The longest rolling window: the ledger read covers it.
    static let ledgerWindow = Duration.seconds(30 * 86_400)
    private static let dayMs: Int64 = 86_400_000

    /// The rolling windows, shortest first, with their limits in hundredths.
    private var windows: [(name: String, spanMs: Int64, limit: Int)] {
        [("day", Self.dayMs, perDay.hundredths), ("30 days", 30 * Self.dayMs, per30Days.hundredths)]
    }

    /// Nil when `needed` fits in every window now; otherwise the first window that is short and
    /// the seconds until enough spends (oldest first) have left it.
    package func refusal(for needed: Epsilon, in ledger: BudgetLedger) -> BudgetRefusal? {
        for window in windows {
            if let wait = Self.wait(ledger, spanMs: window.spanMs, limit: window.limit, needed: needed.hundredths) {
                return BudgetRefusal(window: window.name, retryAfter: wait)
            }
        }
        return nil
    }

    /// ε spent in the last day and the last 30 days.
    package func spent(in ledger: BudgetLedger) -> (day: Epsilon, days30: Epsilon) {
        let day = ledger.spends.filter { $0.atMs > ledger.nowMs - Self.dayMs }.map(\.hundredths).reduce(0, +)
        return (Epsilon(hundredths: day), Epsilon(hundredths: ledger.spends.map(\.hundredths).reduce(0, +)))
    }

    private static func wait(_ ledger: BudgetLedger, spanMs: Int64, limit: Int, needed: Int) -> Int? {
        let inWindow = ledger.spends.filter { $0.atMs > ledger.nowMs - spanMs }
        var total = inWindow.map(\.hundredths).reduce(0, +)
        if total + needed <= limit { return nil }
        for spend in inWindow {
            total -= spend.hundredths
            if total + needed <= limit { return Int((spend.atMs + spanMs - ledger.nowMs + 999) / 1000) }
        }
        return Int(spanMs / 1000)  // more than the window's limit: never (answered as the window's length)
    }
}
