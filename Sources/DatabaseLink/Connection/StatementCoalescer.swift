import Synchronization

/// Runs the calls that arrive while a statement is under way together, in the next statement:
/// one round trip, one statement for PostgreSQL to start and (for a write) one commit for many
/// callers, where each alone would pay its own. Used where hundreds of small identical
/// statements a second come from different requests (runners' position posts,
/// `RunPositionStore`).
///
/// At most one statement is under way at a time; the calls queued meanwhile, up to
/// `maximumWeight` of them by `weight`, make the next one (a single call heavier than that goes
/// alone). `perform` answers one output per input, in order; its error is every caller's. A
/// caller whose task is cancelled still gets its answer: a write it asked for may have committed.
package final class StatementCoalescer<Input: Sendable, Output: Sendable>: Sendable {
    private typealias Waiting = (input: Input, weight: Int, continuation: CheckedContinuation<Output, any Error>)

    private let maximumWeight: Int
    private let gathering: Duration
    private let weight: @Sendable (Input) -> Int
    private let perform: @Sendable ([Input]) async throws -> [Output]
    private let queue = Mutex<(waiting: [Waiting], running: Bool)>(([], false))
    private let performed = Atomic<Int>(0)

    /// - Parameter gathering: how long a call that finds no statement under way waits for others
    ///   before its statement starts (zero: it starts at once).
    package init(
        maximumWeight: Int, gathering: Duration = .zero, weight: @escaping @Sendable (Input) -> Int = { _ in 1 },
        perform: @escaping @Sendable ([Input]) async throws -> [Output]
    ) {
        self.maximumWeight = maximumWeight
        self.gathering = gathering
        self.weight = weight
        self.perform = perform
    }

    /// How many times `perform` ran so far (against the calls, how much was coalesced).
    package var statements: Int { performed.load(ordering: .relaxed) }

    /// `input`'s output, from the statement it went in.
    package func submit(_ input: Input) async throws -> Output {
        let weight = self.weight(input)
        return try await withCheckedThrowingContinuation { continuation in
            let start = queue.withLock { queue in
                queue.waiting.append((input, weight, continuation))
                defer { queue.running = true }
                return !queue.running
            }
            // Detached: the loop outlives the call that started it and runs others' statements
            // too, so it must not carry that request's priority or task-local values.
            if start { Task.detached { await self.drain() } }
        }
    }

    private func drain() async {
        if gathering > .zero { try? await Task.sleep(for: gathering) }
        while let batch = queue.withLock({ queue -> [Waiting]? in
            guard !queue.waiting.isEmpty else {
                queue.running = false
                return nil
            }
            var total = 0
            let count = queue.waiting.prefix { waiting in
                total += waiting.weight
                return total <= maximumWeight
            }.count
            let taken = Array(queue.waiting.prefix(max(count, 1)))
            queue.waiting.removeFirst(taken.count)
            return taken
        }) {
            performed.add(1, ordering: .relaxed)
            do {
                let outputs = try await perform(batch.map(\.input))
                guard outputs.count == batch.count else { throw MismatchedOutputs(inputs: batch.count, outputs: outputs.count) }
                for (waiting, output) in zip(batch, outputs) { waiting.continuation.resume(returning: output) }
            } catch {
                for waiting in batch { waiting.continuation.resume(throwing: error) }
            }
        }
    }

    /// `perform` answered a different number of outputs than it had inputs: a programming error,
    /// every caller of the batch gets it rather than a wrong answer.
    package struct MismatchedOutputs: Error {
        var inputs: Int
        var outputs: Int
    }
}
