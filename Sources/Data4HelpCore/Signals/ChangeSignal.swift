import Synchronization

/// "Something new is in the outbox": a generation counter that waiters can sleep on.
///
/// `EventListener` bumps it for every PostgreSQL notification on `data4help_events` (sent at the
/// commit of any transaction that wrote a party event or a delivery, on whichever instance), so
/// dispatchers and event streams wake at once instead of polling; they still poll slowly in case
/// a notification is missed while the listening connection is down.
package final class ChangeSignal: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let state = Mutex(State())

    package init() {}

    /// The current generation: pass it to `wait` to sleep until something newer happens.
    package var generation: UInt64 { state.withLock { $0.generation } }

    /// Tasks asleep on this signal now, for `/metrics`.
    package var waiterCount: Int { state.withLock { $0.waiters.count } }

    /// Wakes every waiter.
    package func notify() {
        let waiters = state.withLock { state in
            state.generation &+= 1
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// A worker's loop: runs `work` until the task is cancelled — again at once when it found
    /// something to do (it answers true), else once this signal is notified or `pollInterval` has
    /// passed. The generation is read before each run, so a notification during one is not missed.
    package func repeatWhileBusy(pollInterval: Duration, _ work: () async -> Bool) async {
        while !Task.isCancelled {
            let seen = generation
            if await !work() { await wait(after: seen, timeout: pollInterval) }
        }
    }

    /// Returns when the generation is past `seen`, after `timeout`, or when the task is cancelled.
    package func wait(after seen: UInt64, timeout: Duration) async {
        await Self.wait(forAnyOf: [(self, seen)], timeout: timeout)
    }

    /// Returns when any of the signals is past the generation given with it, after `timeout`, or
    /// when the task is cancelled.
    package static func wait(forAnyOf signals: [(signal: ChangeSignal, seen: UInt64)], timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            for (signal, seen) in signals { group.addTask { await signal.waitForChange(after: seen) } }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitForChange(after seen: UInt64) async {
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter &+= 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.generation != seen || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
