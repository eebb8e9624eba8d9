import DatabaseLink
import Synchronization
import Testing

/// `StatementCoalescer`: calls that arrive while a statement runs go in the next one, within
/// its weight, and each caller gets its own output or its statement's error.
@Suite struct StatementCoalescerTests {
    /// Batches as `perform` saw them.
    final class Seen: Sendable {
        let batches = Mutex<[[Int]]>([])
    }

    @Test func callsDuringAStatementGoTogetherWithinTheWeightAndEachGetsItsOwnOutput() async throws {
        let seen = Seen()
        let coalescer = StatementCoalescer<Int, Int>(maximumWeight: 10, weight: { $0 >= 1_000 ? 50 : 1 }) { inputs in
            seen.batches.withLock { $0.append(inputs) }
            try await Task.sleep(for: .milliseconds(5))
            return inputs.map { $0 * 2 }
        }
        let inputs = Array(0..<200) + [1_000, 1_001]
        let outputs = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for input in inputs { group.addTask { (input, try await coalescer.submit(input)) } }
            return try await group.reduce(into: [Int: Int]()) { $0[$1.0] = $1.1 }
        }
        for input in inputs { #expect(outputs[input] == input * 2) }
        let batches = seen.batches.withLock { $0 }
        #expect(batches.flatMap { $0 }.sorted() == inputs, "each call in exactly one statement")
        #expect(coalescer.statements == batches.count)
        #expect(batches.count < 100, "200 calls at once in \(batches.count) statements")
        for batch in batches where batch.contains(where: { $0 >= 1_000 }) {
            #expect(batch.count == 1, "a call heavier than the limit goes alone")
        }
        for batch in batches where !batch.contains(where: { $0 >= 1_000 }) {
            #expect(batch.count <= 10)
        }
    }

    /// With a gathering time, a call that finds nothing under way waits for others: one that
    /// comes 20 ms later goes in the same statement (without, in a statement of its own).
    @Test func aCallWithinTheGatheringTimeGoesInTheSameStatement() async throws {
        for (gathering, statements) in [(Duration.milliseconds(300), 1), (.zero, 2)] {
            let coalescer = StatementCoalescer<Int, Int>(maximumWeight: 10, gathering: gathering) { inputs in inputs }
            async let first = coalescer.submit(1)
            try await Task.sleep(for: .milliseconds(20))
            let second = try await coalescer.submit(2)
            #expect(try await first == 1 && second == 2)
            #expect(coalescer.statements == statements, "gathering \(gathering)")
        }
    }

    struct Refused: Error {}

    @Test func aStatementsErrorIsEveryCallersOfItAndOnlyTheirs() async throws {
        let coalescer = StatementCoalescer<Int, Int>(maximumWeight: 1) { inputs in
            if inputs == [7] { throw Refused() }
            return inputs
        }
        let results = await withTaskGroup(of: (Int, Bool).self) { group in
            for input in 0..<20 {
                group.addTask { (input, (try? await coalescer.submit(input)) == input) }
            }
            return await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
        }
        for input in 0..<20 { #expect(results[input] == (input != 7), "\(input)") }

        let short = StatementCoalescer<Int, Int>(maximumWeight: 5) { inputs in Array(inputs.dropLast()) }
        await #expect(throws: StatementCoalescer<Int, Int>.MismatchedOutputs.self) { try await short.submit(1) }
    }
}
