import ServiceLifecycle
import Synchronization

/// The deadlines of the requests in progress, and one sweep that cancels those past theirs — a
/// lock and a dictionary entry per request instead of a timer. A request is cancelled between
/// `limit` and `limit` plus one tick (a second at most; a tenth of the limit when that is shorter).
final class RequestDeadlines: Service, Sendable {
    let limit: Duration
    private let tick: Duration
    private let clock = ContinuousClock()
    private let running = Mutex<(next: UInt64, entries: [UInt64: Entry])>((0, [:]))

    private struct Entry {
        let deadline: ContinuousClock.Instant
        let cancel: @Sendable () -> Void
    }

    init(limit: Duration) {
        self.limit = limit
        self.tick = min(.seconds(1), limit / 10)
    }

    /// Starts the clock of a request; `cancel` is called once its limit has passed.
    func register(cancel: @escaping @Sendable () -> Void) -> UInt64 {
        let entry = Entry(deadline: clock.now + limit, cancel: cancel)
        return running.withLock { state in
            state.next &+= 1
            state.entries[state.next] = entry
            return state.next
        }
    }

    /// Stops the clock of a request: false when its limit had passed and it was cancelled.
    func finish(_ registration: UInt64) -> Bool {
        running.withLock { $0.entries.removeValue(forKey: registration) != nil }
    }

    /// Cancels every request past its deadline.
    func sweep() {
        let now = clock.now
        let expired = running.withLock { state in
            let past = state.entries.filter { $0.value.deadline <= now }
            for key in past.keys { state.entries.removeValue(forKey: key) }
            return past.values.map(\.cancel)
        }
        for cancel in expired { cancel() }
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: self.tick)
                self.sweep()
            }
        }
    }
}
