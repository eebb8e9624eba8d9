import Data4HelpCore
import Synchronization
import Testing

/// `WorkerCrew`: a notification wakes one idle worker, a find wakes the rest, a backlog drains.
@Suite("Worker crew: one look per notification, every worker for a backlog")
struct WorkerCrewTests {
    /// A queue of `pending` items the workers take one at a time, counting every look and which
    /// workers found something.
    final class Queue: Sendable {
        let pending = Atomic(0)
        let looks = Atomic(0)
        let finders = Mutex<Set<Int>>([])

        func look(by worker: Int) -> Bool {
            looks.add(1, ordering: .relaxed)
            var current = pending.load(ordering: .relaxed)
            while current > 0 {
                let (exchanged, original) = pending.compareExchange(expected: current, desired: current - 1, ordering: .relaxed)
                if exchanged {
                    finders.withLock { _ = $0.insert(worker) }
                    return true
                }
                current = original
            }
            return false
        }
    }

    /// Waits until `condition` holds, for at most a minute: a bound on the wait, not a timing
    /// claim — in a whole-suite run on two busy cores (clean clone, 2026-12-07) the workers had
    /// not made their first look after 10 s.
    private static func eventually(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition() {
            guard ContinuousClock.now < deadline else { return }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test func aNotificationWakesOneWorkerAndAFindWakesTheOthers() async throws {
        let signal = ChangeSignal()
        let crew = WorkerCrew(signal: signal)
        let queue = Queue()
        let workers = 4
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    // A poll interval far beyond the test: only notifications and finds wake anyone.
                    await crew.repeatWhileBusy(pollInterval: .seconds(3_600)) {
                        // Each look takes a moment, as a claim's round trip does.
                        try? await Task.sleep(for: .milliseconds(2))
                        return queue.look(by: worker)
                    }
                }
            }
            // Every worker looks once when it starts, finds nothing and waits.
            try await Self.eventually { queue.looks.load(ordering: .relaxed) == workers && signal.waiterCount == workers }
            #expect(queue.looks.load(ordering: .relaxed) == workers)

            // Three notifications with nothing queued: one look each, not one per worker.
            for expected in [workers + 1, workers + 2, workers + 3] {
                signal.notify()
                try await Self.eventually { queue.looks.load(ordering: .relaxed) == expected && signal.waiterCount == workers }
                try await Task.sleep(for: .milliseconds(100))
                #expect(queue.looks.load(ordering: .relaxed) == expected)
            }

            // A backlog: the worker that wakes finds an item and the others join in until it is gone.
            queue.pending.store(200, ordering: .relaxed)
            signal.notify()
            try await Self.eventually { queue.pending.load(ordering: .relaxed) == 0 && signal.waiterCount == workers }
            #expect(queue.pending.load(ordering: .relaxed) == 0)
            #expect(queue.finders.withLock { $0.count } == workers)
            group.cancelAll()
        }
    }
}
