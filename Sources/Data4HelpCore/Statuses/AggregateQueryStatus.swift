/// Where an organisation's aggregate question is (`aggregate_queries.status`).
package enum AggregateQueryStatus: String, Sendable, CaseIterable, Codable {
    /// Being answered by some instance; a repeat of the same question waits for it.
    case running
    /// Answered with noisy figures.
    case answered
    /// Refused: too few individuals matched, or the privacy budget would be exceeded.
    case refused
    /// The instance answering it failed; it spent nothing and is not counted as asked.
    case failed
}
