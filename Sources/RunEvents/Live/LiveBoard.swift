import DatabaseLink
import Foundation

/// An event's live picture: every runner's latest state, ranked. Starts from the stored states
/// and applies announced ones; answers what changed (a runner's own state, or the rank of those
/// they passed) so that only that is sent.
package struct LiveBoard: Sendable {
    package let event: RunEvent
    /// Every runner, leader first.
    package private(set) var ranked: [RunnerState]

    package init(event: RunEvent, records: [RunnerStateRecord]) {
        self.event = event
        ranked = RunnerState.ranked(
            records.map { RunnerState($0, startsAt: event.startsAt, lengthMeters: event.path.lengthMeters) }, startsAt: event.startsAt
        )
    }

    /// Applies new states (an older one than shown, from a notification that crossed the
    /// snapshot, is ignored) and answers the runners whose state or rank changed, leader first.
    package mutating func apply(_ records: [RunnerStateRecord]) -> [RunnerState] {
        let before = Dictionary(uniqueKeysWithValues: ranked.map { ($0.runnerId, $0) })
        var updated = before
        for record in records {
            if let shown = updated[record.runnerId]?.time, let time = record.lastFixAt, time < shown { continue }
            updated[record.runnerId] = RunnerState(record, startsAt: event.startsAt, lengthMeters: event.path.lengthMeters)
        }
        ranked = RunnerState.ranked(Array(updated.values), startsAt: event.startsAt)
        return ranked.filter { before[$0.runnerId] != $0 }
    }
}
