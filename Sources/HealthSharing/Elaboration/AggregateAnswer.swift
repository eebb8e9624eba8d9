import Data4HelpCore

/// The released answer to a group query: noisy figures only, never an exact one. Stored as it
/// is returned (a repeat of the question gets exactly this back) and written to the audit log.
package struct AggregateAnswer: Codable, Sendable, Equatable {
    /// `answered`, or `refused` when no group passed the noisy threshold.
    package var status: AggregateQueryStatus
    /// Why it was refused ("group too small"); the true count is never said.
    package var reason: String?
    /// The released groups (those below the threshold are left out, not reported as small).
    package var groups: [Group]

    package struct Group: Codable, Sendable, Equatable {
        /// The group's value of the `groupBy` dimension; nil without grouping.
        package var key: [String: String]?
        /// Noisy number of individuals, with its 95 % interval.
        package var count: Int64
        package var countInterval: [Int64]
        /// The statistic (mean, sum, or the count again); nil for histograms and quantiles.
        package var value: Double?
        /// 95 % interval of `value` for the noise added.
        package var interval: [Double]?
        package var histogram: [Bin]?
        package var quantiles: [Quantile]?
    }

    package struct Bin: Codable, Sendable, Equatable {
        package var from: Double
        package var to: Double
        package var count: Int64
        package var interval: [Int64]
    }

    package struct Quantile: Codable, Sendable, Equatable {
        package var p: Double
        package var value: Double
        package var interval: [Double]
    }

    package static let groupTooSmall = "group too small"
}
