import Foundation

extension Date {
    /// Whole milliseconds since the epoch (rounded down): how times cross into SQL exactly
    /// (`'epoch'::timestamptz + n * interval '1 millisecond'`), since postgres-nio's `Date`
    /// binding keeps only whole microseconds of a binary fraction.
    package var epochMilliseconds: Int64 {
        Int64((timeIntervalSince1970 * 1000).rounded(.down))
    }
}
