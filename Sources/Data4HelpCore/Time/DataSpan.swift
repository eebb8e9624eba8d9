/// The times data covers: the earliest and the latest start among some items, epoch
/// milliseconds, both inclusive.
package struct DataSpan: Codable, Sendable, Equatable {
    package var firstMs: Int64
    package var lastMs: Int64

    package init(firstMs: Int64, lastMs: Int64) {
        self.firstMs = min(firstMs, lastMs)
        self.lastMs = max(firstMs, lastMs)
    }

    /// The span of `times`; nil when there are none.
    package init?(_ times: some Sequence<Int64>) {
        var first = Int64.max, last = Int64.min
        for time in times {
            first = min(first, time)
            last = max(last, time)
        }
        guard first <= last else { return nil }
        self.init(firstMs: first, lastMs: last)
    }

    /// The smallest span holding both.
    package func union(_ other: DataSpan?) -> DataSpan {
        guard let other else { return self }
        return DataSpan(firstMs: min(firstMs, other.firstMs), lastMs: max(lastMs, other.lastMs))
    }

    /// The part of this span within `[fromMs, toMs)` (open ends when nil); nil when none is.
    package func clipped(fromMs: Int64?, toMs: Int64?) -> DataSpan? {
        let first = max(firstMs, fromMs ?? .min)
        let last = toMs.map { min(lastMs, $0 - 1) } ?? lastMs
        return first <= last ? DataSpan(firstMs: first, lastMs: last) : nil
    }
}
