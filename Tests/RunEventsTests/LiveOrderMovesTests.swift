import RunEvents
import Testing

@Suite("Live order changes: the fewest runners moved")
struct LiveOrderMovesTests {
    /// What a spectator does with the moves: takes the moved runners out, then puts each at its rank.
    static func apply(_ moves: [LiveBoard.Move], to order: [Int]) -> [Int] {
        let moved = Set(moves.map(\.index))
        var rest = order.filter { !moved.contains($0) }[...]
        var next: [Int] = []
        for move in moves {
            while next.count < move.rank - 1, let first = rest.popFirst() { next.append(first) }
            next.append(move.index)
        }
        return next + rest
    }

    /// The longest subsequence of `new` in the order of `old`, the slow way (every pair).
    static func longestKept(_ old: [Int], _ new: [Int]) -> Int {
        let place = Dictionary(uniqueKeysWithValues: old.enumerated().map { ($1, $0) })
        var longest = [Int](repeating: 0, count: new.count)
        for i in new.indices {
            guard let here = place[new[i]] else { continue }
            longest[i] = 1 + (0..<i).filter { place[new[$0]].map { $0 < here } ?? false }.map { longest[$0] }.reduce(0, max)
        }
        return longest.max() ?? 0
    }

    @Test func oneRunnerPassingManyIsOneMove() {
        let old = Array(0..<100)
        var new = old
        new.remove(at: 90)
        new.insert(90, at: 10)
        #expect(LiveBoard.moves(from: old, to: new) == [LiveBoard.Move(index: 90, rank: 11)])
        #expect(LiveBoard.moves(from: old, to: old).isEmpty)
    }

    @Test func aRunnerTheOldOrderDidNotHaveIsMoved() {
        let moves = LiveBoard.moves(from: [2, 0, 1], to: [2, 3, 0, 1])
        #expect(moves == [LiveBoard.Move(index: 3, rank: 2)])
        #expect(Self.apply(moves, to: [2, 0, 1]) == [2, 3, 0, 1])
    }

    /// Random reorderings, from a few neighbours swapping to a shuffle: the moves rebuild the new
    /// order exactly, leader first, and are as few as can be (the runners off the longest run
    /// that kept its order).
    @Test func movesRebuildTheNewOrderAndAreTheFewest() {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<300 {
            let count = Int.random(in: 0...60, using: &generator)
            let old = Array(0..<count).shuffled(using: &generator)
            var new = old
            switch round % 3 {
            case 0:  // neighbours swap, as in a dense pack
                for _ in 0..<Int.random(in: 0...5, using: &generator) where count > 1 {
                    let at = Int.random(in: 0..<(count - 1), using: &generator)
                    new.swapAt(at, at + 1)
                }
            case 1:  // a few runners jump
                for _ in 0..<Int.random(in: 0...4, using: &generator) where count > 0 {
                    let runner = new.remove(at: Int.random(in: 0..<count, using: &generator))
                    new.insert(runner, at: Int.random(in: 0..<count, using: &generator))
                }
            default:
                new.shuffle(using: &generator)
            }
            let moves = LiveBoard.moves(from: old, to: new)
            #expect(Self.apply(moves, to: old) == new, "round \(round): \(old) → \(new)")
            #expect(moves.map(\.rank) == moves.map(\.rank).sorted())
            #expect(moves.count == count - Self.longestKept(old, new), "round \(round)")
        }
    }
}
