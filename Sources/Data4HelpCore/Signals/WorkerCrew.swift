import Synchronization

/// Several workers draining one queue that a `ChangeSignal` announces, woken one at a time.
///
/// With `ChangeSignal.repeatWhileBusy` every worker wakes at every notification and looks: the
/// webhook dispatcher's eight workers ran eight claims for every party event committed, nearly
/// all finding nothing (an upload with subscribers notifies once per statement; `bench ingest`'s
/// subscribed phase made about 400 empty claims a second). In a crew, a notification wakes one
/// idle worker (the first to take its generation); a worker that finds work wakes the idle rest,
/// which look too, so a backlog still gets every worker. Each worker still looks on its own every
/// `pollInterval` (a missed notification, retries falling due).
package final class WorkerCrew: Sendable {
    private let signal: ChangeSignal
    /// Bumped whenever a worker found work: there may be more.
    private let found = ChangeSignal()
    /// The newest generation of `signal` some worker has woken for.
    private let taken = Atomic<UInt64>(0)

    package init(signal: ChangeSignal) {
        self.signal = signal
    }

    /// One worker's loop, until the task is cancelled: runs `work` (true: it found something, so
    /// again at once, and the idle workers look too), else waits for a notification no other
    /// worker took, another worker's find, or `pollInterval`. Generations are read before each
    /// run, so a notification during one is not missed.
    package func repeatWhileBusy(pollInterval: Duration, _ work: () async -> Bool) async {
        while !Task.isCancelled {
            var seen = signal.generation
            let foundSeen = found.generation
            if await work() {
                found.notify()
                continue
            }
            while !Task.isCancelled {
                await ChangeSignal.wait(forAnyOf: [(signal, seen), (found, foundSeen)], timeout: pollInterval)
                let now = signal.generation
                // Look after a find, after the poll interval (nothing newer), or for a notification nobody took.
                if found.generation != foundSeen || now == seen || take(now) { break }
                seen = now
            }
        }
    }

    /// Whether this worker is the first to wake for `generation`.
    private func take(_ generation: UInt64) -> Bool {
        var current = taken.load(ordering: .relaxed)
        while current < generation {
            let (exchanged, original) = taken.compareExchange(expected: current, desired: generation, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }
}
