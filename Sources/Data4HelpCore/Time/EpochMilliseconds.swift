import Foundation

extension Date {
    /// Whole milliseconds since the epoch (rounded down): how times cross into SQL exactly
    /// (`'epoch'::timestamptz + n * interval '1 millisecond'`), since postgres-nio's `Date`
    /// binding keeps only whole microseconds of a binary fraction.
    /// Saturates instead of trapping for a date outside Int64's range of milliseconds.
    package var epochMilliseconds: Int64 {
        let milliseconds = (timeIntervalSince1970 * 1000).rounded(.down)
        if let exact = Int64(exactly: milliseconds) { return exact }
        return milliseconds.isNaN ? 0 : milliseconds < 0 ? .min : .max
    }
}
