/// Who an answer's released groups included, each once and in ascending order: the population
/// of its privacy record (`AggregateQueryStore.finish`).
///
/// A time grouping counts a person in every period they have values in: half a million ids
/// over 10,000 people for 49 weeks. Inserting them into a `Set` and sorting took 6–9 ms of each
/// answer. Members are row ids of `individuals`, dense within their range, so a bitmap over
/// that range takes each id with one bit operation and reads the population out already in
/// order. Where the ids are too sparse for a bitmap to pay (its words would outnumber the ids
/// many times over), the `Set` serves.
package enum MemberUnion {
    /// Bits of range per id collected at most before the bitmap gives way to a `Set`: at 64, the
    /// bitmap takes no more memory than the ids themselves.
    static let maximumBitsPerId = 64
    /// A bitmap this small is always worth it (2 MB of bits: 16 M ids of range).
    static let minimumBitmapBits = 1 << 24

    package static func population(of groups: [ExactGroup], released: Set<String>) -> [Int64] {
        let parts = groups.lazy.filter { released.contains($0.key) }.map(\.members)
        var total = 0
        var lowest = Int64.max
        var highest = Int64.min
        for members in parts {
            total += members.count
            for id in members {
                lowest = min(lowest, id)
                highest = max(highest, id)
            }
        }
        guard total > 0 else { return [] }
        let (span, overflow) = highest.subtractingReportingOverflow(lowest)
        let (scaled, scaledOverflow) = total.multipliedReportingOverflow(by: maximumBitsPerId)
        let limit = max(minimumBitmapBits, scaledOverflow ? Int.max : scaled)
        guard !overflow, span < limit else {
            var seen = Set<Int64>(minimumCapacity: total)
            for members in parts { seen.formUnion(members) }
            return seen.sorted()
        }
        var words = [UInt64](repeating: 0, count: Int(span) / 64 + 1)
        words.withUnsafeMutableBufferPointer { words in
            for members in parts {
                for id in members {
                    let offset = Int(id &- lowest)  // within 0...span: checked above
                    words[offset >> 6] |= UInt64(1) << UInt64(offset & 63)
                }
            }
        }
        var population = [Int64]()
        population.reserveCapacity(words.reduce(0) { $0 + $1.nonzeroBitCount })
        for (index, word) in words.enumerated() where word != 0 {
            var rest = word
            while rest != 0 {
                population.append(lowest &+ Int64(index * 64 + rest.trailingZeroBitCount))
                rest &= rest &- 1
            }
        }
        return population
    }
}
