import DatabaseLink
import Foundation
import Synchronization

/// Fans runners' new states out to this instance's spectators.
///
/// Every instance listens on `RunPositionStore.channel`, so a position posted to any instance
/// reaches spectators on all of them. Each spectator's subscription keeps only the latest
/// pending state per runner: a slow spectator gets fewer, fresher updates and never makes the
/// hub (or other spectators) wait or hold a growing queue.
package final class LiveRunHub: Sendable {
    /// One spectator's view of one event.
    package final class Subscription: Sendable {
        package let runId: UUID
        /// Yields when there is something to take (coalesced: one wake-up for any number of states).
        package let wakeups: AsyncStream<Void>
        private let continuation: AsyncStream<Void>.Continuation
        private let pending = Mutex<[UUID: RunnerStateRecord]>([:])

        init(runId: UUID) {
            self.runId = runId
            (wakeups, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        }

        /// The states that arrived since the last call, at most one per runner.
        package func take() -> [RunnerStateRecord] {
            pending.withLock { pending in
                defer { pending = [:] }
                return Array(pending.values)
            }
        }

        func offer(_ state: RunnerStateRecord) {
            pending.withLock { $0[state.runnerId] = state }
            continuation.yield()
        }

        func finish() {
            continuation.finish()
        }
    }

    private let subscriptions = Mutex<[UUID: [ObjectIdentifier: Subscription]]>([:])

    package init() {}

    package func subscribe(to runId: UUID) -> Subscription {
        let subscription = Subscription(runId: runId)
        subscriptions.withLock { $0[runId, default: [:]][ObjectIdentifier(subscription)] = subscription }
        return subscription
    }

    package func unsubscribe(_ subscription: Subscription) {
        subscriptions.withLock { all in
            all[subscription.runId]?.removeValue(forKey: ObjectIdentifier(subscription))
            if all[subscription.runId]?.isEmpty == true { all.removeValue(forKey: subscription.runId) }
        }
        subscription.finish()
    }

    /// Spectators of this instance, for the metrics and the benchmark.
    package var spectatorCount: Int { subscriptions.withLock { $0.values.reduce(0) { $0 + $1.count } } }

    /// A notification from PostgreSQL (nil after a reconnection: nothing to hand on).
    package func receive(_ payload: String?) {
        guard let payload, let announcement = try? JSONDecoder.live.decode(LiveAnnouncement.self, from: Data(payload.utf8)) else { return }
        let targets = subscriptions.withLock { Array(($0[announcement.runId] ?? [:]).values) }
        guard !targets.isEmpty else { return }
        let state = announcement.record
        for subscription in targets { subscription.offer(state) }
    }
}

extension LiveAnnouncement {
    var record: RunnerStateRecord {
        RunnerStateRecord(
            runnerId: runnerId, displayName: displayName, lastFixAt: lastFixAt, latitude: latitude, longitude: longitude,
            distanceMeters: distanceMeters, firstFixAt: firstFixAt, offCourse: offCourse, finishedAt: finishedAt, droppedFixes: 0
        )
    }
}

extension JSONDecoder {
    static var live: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return decoder
    }
}
