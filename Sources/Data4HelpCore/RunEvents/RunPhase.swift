/// Where a run event is in time: before its start, between start and end, after, or cancelled.
/// The rule that decides it is `RunEvents`' (`RunPhase.of(…)`, `RunEventRules.swift`).
package enum RunPhase: String, Sendable, CaseIterable {
    case upcoming, live, finished, cancelled
}
