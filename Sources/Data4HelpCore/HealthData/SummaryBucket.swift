import Foundation

/// The width of a summary bucket, in the individual's time zone.
package enum SummaryBucket: String, Sendable, CaseIterable {
    case hour, day, week
}
