import DatabaseLink
import HealthSharing
import SeededRandom
import Testing

@Suite("The released groups' members, each once and in order")
struct MemberUnionTests {
    /// What the union must equal: every member of a released group, distinct, ascending.
    static func reference(_ groups: [ExactGroup], _ released: Set<String>) -> [Int64] {
        Set(groups.filter { released.contains($0.key) }.flatMap(\.members)).sorted()
    }

    /// Compared without printing a million ids on a failure: the sizes and the first difference.
    static func expectSame(_ got: [Int64], _ expected: [Int64], sourceLocation: SourceLocation = #_sourceLocation) {
        let difference = zip(got, expected).enumerated().first { $0.element.0 != $0.element.1 }
        #expect(
            got.count == expected.count && difference == nil,
            "\(got.count) ids for \(expected.count); first difference: \(difference.map { "[\($0.offset)] \($0.element.0) for \($0.element.1)" } ?? "none")",
            sourceLocation: sourceLocation)
    }

    static func group(_ key: String, _ members: [Int64]) -> ExactGroup {
        ExactGroup(key: key, individuals: Int64(members.count), centredSum: 0, sum: 0, bins: [], members: members)
    }

    /// Week groups as the statement gives them: most people in every week, in runs that are sorted
    /// within a worker's part, some people in a few weeks only, and refused weeks whose members
    /// must not count unless a released week has them too.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5])
    func timeGroupsGiveWhatTheSetGives(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        let people = Int64(1 + random.next() % 5_000)
        let base = Int64(random.next() % 1_000_000)
        var groups: [ExactGroup] = []
        var released: Set<String> = []
        for week in 0..<49 {
            var members = (0..<people).filter { _ in random.next() % 10 != 0 }.map { base + $0 }
            let cut = members.isEmpty ? 0 : Int(random.next() % UInt64(members.count))
            members = Array(members[cut...] + members[..<cut])  // two workers' parts, concatenated
            groups.append(Self.group("w\(week)", members))
            if random.next() % 4 != 0 { released.insert("w\(week)") }
        }
        groups.append(Self.group("refused-only", [base + people + 7, base - 3]))
        Self.expectSame(MemberUnion.population(of: groups, released: released), Self.reference(groups, released))
    }

    @Test func nothingReleasedIsNobody() {
        let groups = [Self.group("a", [1, 2, 3])]
        #expect(MemberUnion.population(of: groups, released: []) == [])
        #expect(MemberUnion.population(of: [], released: ["a"]) == [])
        #expect(MemberUnion.population(of: [Self.group("a", [])], released: ["a"]) == [])
    }

    /// Ids at the ends of `Int64` (a span that overflows), negative ids, and ids far apart (a span
    /// too wide for a bitmap) go through the `Set`; ids at one end alone still through the bitmap.
    @Test(arguments: [
        [Int64.min, Int64.max, 0, Int64.max, Int64.min],
        [-5, -1, -5, 3, 0],
        [1, 1 << 40, 17, 1 << 40, 2],
        [Int64.max - 2, Int64.max, Int64.max - 1, Int64.max],
        [Int64.min + 1, Int64.min, Int64.min + 64, Int64.min + 63],
        [42],
    ])
    func extremesGiveWhatTheSetGives(members: [Int64]) {
        let groups = [Self.group("a", members), Self.group("b", members.reversed()), Self.group("c", [7, 8])]
        for released: Set<String> in [["a"], ["a", "b"], ["a", "b", "c"], ["c"]] {
            Self.expectSame(MemberUnion.population(of: groups, released: released), Self.reference(groups, released))
        }
    }

    /// A dense range of a million ids, every word of the bitmap full, and its edges.
    @Test func aDenseRangeComesBackWhole() {
        let ids = Array(Int64(1_000)..<Int64(1_001_000))
        let groups = [Self.group("a", ids.reversed()), Self.group("b", Array(ids.prefix(100)))]
        Self.expectSame(MemberUnion.population(of: groups, released: ["a", "b"]), ids)
    }
}
