import DatabaseLink
import Foundation

/// One spectator's picture of an event: every runner's latest state, ranked. Starts from a
/// snapshot and applies announced states; answers what changed (a runner's own state, or the
/// rank of those they passed) so that only that is sent.
package struct LiveBoard: Sendable {
    package let event: RunEvent
    private var states: [UUID: RunnerState] = [:]

    package init(event: RunEvent, records: [RunnerStateRecord]) {
        self.event = event
        for record in records { states[record.runnerId] = RunnerState(record, startsAt: event.startsAt, lengthMeters: event.path.lengthMeters) }
        states = Dictionary(uniqueKeysWithValues: RunnerState.ranked(Array(states.values)).map { ($0.runnerId, $0) })
    }

    /// Every runner, leader first.
    package var ranked: [RunnerState] { states.values.sorted { ($0.rank ?? .max) < ($1.rank ?? .max) } }

    /// Applies new states (an older one than shown, from a notification that crossed the
    /// snapshot, is ignored) and answers the runners whose state or rank changed, leader first.
    package mutating func apply(_ records: [RunnerStateRecord]) -> [RunnerState] {
        let before = states
        var updated = states
        for record in records {
            if let shown = updated[record.runnerId]?.time, let time = record.lastFixAt, time < shown { continue }
            updated[record.runnerId] = RunnerState(record, startsAt: event.startsAt, lengthMeters: event.path.lengthMeters)
        }
        states = Dictionary(uniqueKeysWithValues: RunnerState.ranked(Array(updated.values)).map { ($0.runnerId, $0) })
        return ranked.filter { before[$0.runnerId] != $0 }
    }
}
