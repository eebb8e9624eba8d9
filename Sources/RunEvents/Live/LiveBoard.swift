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
        let keys = states.map { RankKey($0, standing: $0.standing(at: newest, startsAt: event.startsAt)) }
        order.sort { a, b in keys[a].ranksAhead(of: keys[b]) }
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

    /// A runner moved in the order, and the rank it moved to.
    package struct Move: Sendable, Equatable {
        package var index: Int
        package var rank: Int

        package init(index: Int, rank: Int) {
            self.index = index
            self.rank = rank
        }
    }

    /// The fewest runners to move to turn the order `old` into `new` (both every index, leader
    /// first), each with its rank in `new`, leader first: everyone else keeps their order
    /// relative to each other (they are the longest run of `new` that `old` already has in
    /// that order). A spectator that holds `old` removes the moved runners and inserts each at
    /// its rank in turn. When one runner passes a hundred, that is one move where rank entries
    /// were a hundred and one. An index not in `old` is always moved.
    package static func moves(from old: [Int], to new: [Int]) -> [Move] {
        var placeInOld = [Int](repeating: -1, count: (old.max() ?? -1) + 1)
        for (place, index) in old.enumerated() where index >= 0 { placeInOld[index] = place }
        // The longest subsequence of `new` whose places in `old` increase (patience sorting):
        // `tails[k]` is the position in `new` of the smallest last place of such a run of k + 1.
        var tails: [Int] = []
        var previous = [Int](repeating: -1, count: new.count)
        for (position, index) in new.enumerated() {
            guard index >= 0, index < placeInOld.count, placeInOld[index] >= 0 else { continue }
            let place = placeInOld[index]
            var low = 0, high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if placeInOld[new[tails[middle]]] < place { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[position] = tails[low - 1] }
            if low == tails.count { tails.append(position) } else { tails[low] = position }
        }
        var kept = [Bool](repeating: false, count: new.count)
        var position = tails.last ?? -1
        while position >= 0 {
            kept[position] = true
            position = previous[position]
        }
        return new.indices.compactMap { position in kept[position] ? nil : Move(index: new[position], rank: position + 1) }
    }
}
