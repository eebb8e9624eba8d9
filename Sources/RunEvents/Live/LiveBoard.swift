import Data4HelpCore
import DatabaseLink
import Foundation

/// An event's live picture: every runner's latest state, ranked. Starts from the stored states
/// and applies announced ones; answers what changed (a runner's own state, or the rank of those
/// they passed) so that only that is sent.
///
/// Each runner has a small **index** for the board's life (the order the stored states came
/// in, then the order unknown runners were announced): the compact live protocol names runners
/// by it, and sends their id and name once. The board and the hub keep everything per runner in
/// arrays by index, not in dictionaries by runner id: at a big event a batch went through every
/// runner several times, and hashing 5,000 ids at each step was a visible share of the machine
/// (`bench live`'s city race).
package struct LiveBoard: Sendable {
    package let event: RunEvent
    /// Every runner's state, by index.
    package private(set) var states: [RunnerState]
    /// Every index, leader first.
    package private(set) var order: [Int]
    /// Every runner's index by id.
    package private(set) var indices: [UUID: Int]

    package init(event: RunEvent, records: [RunnerStateRecord]) {
        self.event = event
        states = []
        order = []
        indices = [:]
        _ = apply(records)
    }

    /// Every runner, leader first.
    package var ranked: [RunnerState] { order.map { states[$0] } }

    /// What a batch of new states changed, each list leader first, by index.
    package struct Changes: Sendable, Equatable {
        /// Runners with a new state of their own (their new rank included).
        package var moved: [Int] = []
        /// Runners whose rank alone changed, because others passed them or they passed others.
        package var reranked: [Int] = []
        /// Every runner whose rank changed, moved or not (a format whose states carry no rank
        /// sends all of these as rank entries).
        package var ranksChanged: [Int] = []
        /// Runners the board did not know (an announcement that overtook the roster's change):
        /// they got the next indices, which spectators learn from a new snapshot.
        package var joined = false

        package var isEmpty: Bool { moved.isEmpty && reranked.isEmpty }
    }

    /// Applies new states (an older one than shown, from a notification that crossed the
    /// snapshot, is ignored) and answers which runners changed, and how.
    package mutating func apply(_ records: [RunnerStateRecord]) -> Changes {
        var changes = Changes()
        // The runners this batch gave a new state (1) or brought to the board (2).
        var touched: [(index: Int, mark: UInt8)] = []
        for record in records {
            var state = RunnerState(record, startsAt: event.startsAt, lengthMeters: event.path.lengthMeters)
            if let index = indices[record.runnerId] {
                let shown = states[index]
                if let time = shown.time, let fix = record.lastFixAt, fix < time { continue }
                state.rank = shown.rank
                if state != shown { touched.append((index, 1)) }
                states[index] = state
            } else {
                let index = states.count
                indices[record.runnerId] = index
                states.append(state)
                order.append(index)
                touched.append((index, 2))
                changes.joined = true
            }
        }
        guard !touched.isEmpty else { return changes }
        var marks = [UInt8](repeating: 0, count: states.count)
        for (index, mark) in touched { marks[index] = max(marks[index], mark) }
        // The previous order is nearly the new one: the sort (stable, run-adaptive) is about
        // linear on it.
        let newest = RunnerState.newestFix(of: states)
        let standings = states.map { $0.standing(at: newest, startsAt: event.startsAt) }
        order.sort { a, b in RunnerState.ranksAhead(states[a], standings[a], of: states[b], standings[b]) }
        for (position, index) in order.enumerated() {
            let rank = position + 1
            let rankChanged = states[index].rank != rank
            states[index].rank = rank
            switch marks[index] {
            case 2:
                changes.moved.append(index)
                changes.ranksChanged.append(index)
            case 1:
                changes.moved.append(index)
                if rankChanged { changes.ranksChanged.append(index) }
            default:
                guard rankChanged else { continue }
                changes.reranked.append(index)
                changes.ranksChanged.append(index)
            }
        }
        return changes
    }
}
