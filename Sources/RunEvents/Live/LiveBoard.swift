import Data4HelpCore
import DatabaseLink
import Foundation

/// An event's live picture: every runner's latest state, ranked. Starts from the stored states
/// and applies announced ones; answers what changed (a runner's own state, or the rank of those
/// they passed) so that only that is sent.
///
/// Each runner also has a small **index** for the board's life (the order the stored states
/// came in): the compact live protocol names runners by it, and sends their id and name once.
package struct LiveBoard: Sendable {
    package let event: RunEvent
    /// Every runner, leader first.
    package private(set) var ranked: [RunnerState]
    /// Every runner's id by index.
    package private(set) var roster: [UUID]
    package private(set) var indices: [UUID: Int]

    package init(event: RunEvent, records: [RunnerStateRecord]) {
        self.event = event
        ranked = RunnerState.ranked(
            records.map { RunnerState($0, startsAt: event.startsAt, lengthMeters: event.path.lengthMeters) }, startsAt: event.startsAt
        )
        roster = []
        indices = [:]
        for record in records where indices[record.runnerId] == nil {
            indices[record.runnerId] = roster.count
            roster.append(record.runnerId)
        }
    }

    /// What a batch of new states changed, leader first.
    package struct Changes: Sendable, Equatable {
        /// Runners with a new state of their own (their new rank included).
        package var moved: [RunnerState] = []
        /// Runners whose rank alone changed, because others passed them or they passed others.
        package var reranked: [RunnerState] = []
        /// Every runner whose rank changed, moved or not (a format whose states carry no rank
        /// sends all of these as rank entries).
        package var ranksChanged: [RunnerState] = []
        /// Runners the board did not know (an announcement that overtook the roster's change):
        /// they got the next indices, which spectators learn from a new snapshot.
        package var joined = false

        package var isEmpty: Bool { moved.isEmpty && reranked.isEmpty }
    }

    /// Applies new states (an older one than shown, from a notification that crossed the
    /// snapshot, is ignored) and answers which runners changed, and how.
    package mutating func apply(_ records: [RunnerStateRecord]) -> Changes {
        let before = Dictionary(uniqueKeysWithValues: ranked.map { ($0.runnerId, $0) })
        var updated = before
        var changes = Changes()
        for record in records {
            if let shown = updated[record.runnerId]?.time, let time = record.lastFixAt, time < shown { continue }
            if indices[record.runnerId] == nil {
                indices[record.runnerId] = roster.count
                roster.append(record.runnerId)
                changes.joined = true
            }
            updated[record.runnerId] = RunnerState(record, startsAt: event.startsAt, lengthMeters: event.path.lengthMeters)
        }
        ranked = RunnerState.ranked(Array(updated.values), startsAt: event.startsAt)
        for state in ranked {
            guard var previous = before[state.runnerId] else {
                changes.moved.append(state)
                changes.ranksChanged.append(state)
                continue
            }
            guard previous != state else { continue }
            if previous.rank != state.rank { changes.ranksChanged.append(state) }
            previous.rank = state.rank
            if previous == state { changes.reranked.append(state) } else { changes.moved.append(state) }
        }
        return changes
    }
}
