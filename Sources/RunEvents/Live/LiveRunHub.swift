import Data4HelpCore
import DatabaseLink
import Foundation
import NIOCore
import Synchronization

/// How the live view goes on the wire. The hub renders each runner's state once per change and
/// hands the same bytes to every spectator; the HTTP layer decides what the bytes are.
package protocol LiveWireFormat: Sendable {
    /// One runner's state.
    func state(_ state: RunnerState) -> ByteBuffer
    /// The first message on a connection (and after the event or its roster changed): the event
    /// and every runner, leader first.
    func snapshot(event: RunEvent, runners: [ByteBuffer]) -> ByteBuffer
    /// A runner's rank alone (when others passed them: their own state is unchanged).
    func rank(_ state: RunnerState) -> ByteBuffer
    /// The runners whose state changed, and those whose rank alone changed, leader first.
    func update(runners: [ByteBuffer], ranks: [ByteBuffer]) -> ByteBuffer
}

/// Fans runners' new states out to this instance's spectators.
///
/// Every instance listens on `RunPositionStore.channel`, so a position posted to any instance
/// reaches spectators on all of them. Per event with spectators here, the hub keeps one
/// `LiveBoard` (loaded from the database once), applies announced states at most once per
/// `interval` (a batch), ranks once and renders each changed runner once (a runner whose rank
/// alone changed is also rendered as a short rank entry: in a dense pack one runner's move
/// re-ranks many, and their full states would be most of the bytes). A spectator's connection
/// takes, whenever it is free to write, every runner that changed since what it last sent — as
/// one message, shared byte for byte with every spectator at the same point. A slow
/// spectator therefore gets fewer, larger messages with each runner's latest state; it never
/// holds a queue, and never makes the hub or other spectators wait.
package final class LiveRunHub: Sendable {
    package typealias Loader = @Sendable (UUID) async throws -> LiveBoard

    private let load: Loader
    private let wire: any LiveWireFormat
    private let interval: Duration
    private let runs = Mutex<[UUID: LiveRun]>([:])

    /// - Parameters:
    ///   - interval: the shortest time between two batches of one event (the most an update waits).
    ///   - load: the event and its runners' stored states (`LivePositions.snapshot`).
    package init(interval: Duration = .milliseconds(50), wire: any LiveWireFormat, load: @escaping Loader) {
        self.interval = interval
        self.wire = wire
        self.load = load
    }

    /// Starts watching an event. `wake` is called whenever the spectator has something new to
    /// take with `Subscription.next()` — first the snapshot (called once before this returns), then
    /// after each batch. It must only schedule the taking (it runs under the hub's batching loop),
    /// and may be called again before the previous message was taken: wake-ups coalesce.
    /// Throws `RunEventError.notFound` for an unknown event.
    package func subscribe(to runId: UUID, wake: @escaping @Sendable () -> Void) async throws -> Subscription {
        let subscription = runs.withLock { runs in
            let run = runs[runId] ?? LiveRun(id: runId, interval: interval, wire: wire, load: load)
            runs[runId] = run
            return run.add(wake: wake)
        }
        do {
            try await subscription.run.ready()
        } catch {
            unsubscribe(subscription)
            throw error
        }
        subscription.wake()  // the snapshot is due
        return subscription
    }

    package func unsubscribe(_ subscription: Subscription) {
        let run = subscription.run
        runs.withLock { runs in
            if run.remove(subscription) == 0, runs[run.id] === run { runs.removeValue(forKey: run.id) }
        }
        subscription.finish()
    }

    /// Spectators of this instance, for the metrics and the benchmark.
    package var spectatorCount: Int {
        runs.withLock { $0.values.reduce(0) { $0 + $1.subscriberCount } }
    }

    /// Events watched on this instance (each holds its board and rendered states), for `/metrics`.
    package var watchedEventCount: Int { runs.withLock { $0.count } }

    /// Spectators with a message due that they have not taken yet (at most one each: what waits
    /// is each runner's latest state, not a queue of frames), for `/metrics`.
    package var messagesDue: Int {
        runs.withLock { Array($0.values) }.reduce(0) { $0 + $1.dueCount }
    }

    /// A notification from PostgreSQL: a runner's new state, or a change of an event or its
    /// roster (reloaded). Nil after the listener (re)connected: anything may have been missed
    /// meanwhile, so every watched event is reloaded.
    package func receive(_ payload: String?) {
        guard let payload else {
            for run in runs.withLock({ Array($0.values) }) { run.reload() }
            return
        }
        guard let announcement = LiveAnnouncement.decode(payload),
            let run = runs.withLock({ $0[announcement.runId] })
        else { return }
        if let state = announcement.state { run.announce(state) } else { run.reload() }
    }

    /// One spectator's view of one event.
    package final class Subscription: Sendable {
        let run: LiveRun
        private let onWake: @Sendable () -> Void
        private let finished = Atomic(false)

        init(run: LiveRun, wake: @escaping @Sendable () -> Void) {
            self.run = run
            onWake = wake
        }

        /// The message to send now — the snapshot first, then every runner changed since the
        /// previous one — or nil when there is nothing new (or the spectator left). Take the next
        /// one when this one has been written: what waits meanwhile is each runner's latest state.
        package func next() -> ByteBuffer? {
            finished.load(ordering: .relaxed) ? nil : run.message(for: self)
        }

        func wake() {
            if !finished.load(ordering: .relaxed) { onWake() }
        }

        func finish() { finished.store(true, ordering: .relaxed) }
    }
}

/// One event watched on this instance: its board, each runner's rendered state, and which
/// batch last changed it.
final class LiveRun: Sendable {
    let id: UUID
    private let interval: Duration
    private let wire: any LiveWireFormat
    private let load: LiveRunHub.Loader

    private struct Viewer {
        let subscription: LiveRunHub.Subscription
        /// The board generation and batch this spectator has been sent (generation 0: nothing yet).
        var generation = 0
        var seen: UInt64 = 0
    }

    private struct State {
        var board: LiveBoard?
        /// Bumped by every (re)load: spectators then get a new snapshot.
        var generation = 0
        var loadError: (any Error)?
        var reloadWanted = false
        /// Announced states not applied yet.
        var pending: [RunnerStateRecord] = []
        /// Each runner's full state as it is now (rank included) and the batch that last
        /// changed it (not counting rank-only changes)…
        var rendered: [UUID: ByteBuffer] = [:]
        var changedIn: [UUID: UInt64] = [:]
        /// …and its rank entry and the batch that last changed its rank alone.
        var renderedRank: [UUID: ByteBuffer] = [:]
        var rerankedIn: [UUID: UInt64] = [:]
        /// The newest batch.
        var batch: UInt64 = 0
        var lastBatchAt: ContinuousClock.Instant = .now - .seconds(3_600)
        /// The updates to the newest batch, by the batch they start from: built by the first
        /// spectator that needs one and shared with the others at the same point (most are one
        /// batch behind; a loaded machine spreads them over a few).
        var sharedUpdates: (to: UInt64, from: [UInt64: ByteBuffer]) = (0, [:])
        var sharedSnapshot: (generation: Int, batch: UInt64, phase: RunPhase, message: ByteBuffer)?
        var viewers: [ObjectIdentifier: Viewer] = [:]
        var waiting: [CheckedContinuation<Void, any Error>] = []
        /// The worker (loading and batching) is running.
        var working = false
    }

    private let state = Mutex(State())

    init(id: UUID, interval: Duration, wire: any LiveWireFormat, load: @escaping LiveRunHub.Loader) {
        self.id = id
        self.interval = interval
        self.wire = wire
        self.load = load
    }

    var subscriberCount: Int { state.withLock { $0.viewers.count } }

    /// Viewers behind the newest batch or board generation.
    var dueCount: Int {
        state.withLock { state in state.viewers.values.count { $0.generation < state.generation || $0.seen < state.batch } }
    }

    func add(wake: @escaping @Sendable () -> Void) -> LiveRunHub.Subscription {
        let subscription = LiveRunHub.Subscription(run: self, wake: wake)
        state.withLock { $0.viewers[ObjectIdentifier(subscription)] = Viewer(subscription: subscription) }
        return subscription
    }

    /// Answers how many spectators remain.
    func remove(_ subscription: LiveRunHub.Subscription) -> Int {
        state.withLock { state in
            state.viewers.removeValue(forKey: ObjectIdentifier(subscription))
            return state.viewers.count
        }
    }

    /// Returns once the board is loaded (loading it if nobody has yet).
    func ready() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let start = state.withLock { state -> Bool in
                if state.board != nil {
                    continuation.resume()
                    return false
                }
                state.waiting.append(continuation)
                return startWorker(&state)
            }
            if start { Task { await work() } }
        }
    }

    func announce(_ record: RunnerStateRecord) {
        let start = state.withLock { state -> Bool in
            state.pending.append(record)
            return startWorker(&state)
        }
        if start { Task { await work() } }
    }

    func reload() {
        let start = state.withLock { state -> Bool in
            state.reloadWanted = true
            return startWorker(&state)
        }
        if start { Task { await work() } }
    }

    private func startWorker(_ state: inout State) -> Bool {
        guard !state.working else { return false }
        state.working = true
        return true
    }

    private enum Step {
        case load(pacedFrom: ContinuousClock.Instant)
        case batch(pacedFrom: ContinuousClock.Instant)
        case done
    }

    /// Loads and batches, one step at a time, until there is nothing left to do.
    private func work() async {
        while true {
            let step = state.withLock { state -> Step in
                if state.viewers.isEmpty && state.waiting.isEmpty {
                    state.working = false
                    return .done
                }
                if state.board == nil || state.reloadWanted { return .load(pacedFrom: state.lastBatchAt) }
                if !state.pending.isEmpty { return .batch(pacedFrom: state.lastBatchAt) }
                state.working = false
                return .done
            }
            switch step {
            case .done:
                return
            case .load(let last):
                try? await Task.sleep(until: last + interval)
                await reloadBoard()
            case .batch(let last):
                try? await Task.sleep(until: last + interval)
                applyBatch()
            }
        }
    }

    private func reloadBoard() async {
        state.withLock { $0.reloadWanted = false }
        let loaded: LiveBoard
        do {
            loaded = try await load(id)
        } catch {
            let waiting = state.withLock { state in
                defer { state.waiting = [] }
                state.lastBatchAt = .now + .seconds(1)  // the next try, if spectators stay
                if state.board != nil { state.reloadWanted = true }
                return state.waiting
            }
            for continuation in waiting { continuation.resume(throwing: error) }
            return
        }
        let rendered = Dictionary(uniqueKeysWithValues: loaded.ranked.map { ($0.runnerId, wire.state($0)) })
        let (waiting, viewers) = state.withLock { state in
            defer { state.waiting = [] }
            state.board = loaded
            state.generation += 1
            state.batch += 1
            state.rendered = rendered
            state.changedIn = rendered.mapValues { _ in state.batch }
            state.renderedRank = [:]
            state.rerankedIn = [:]
            state.lastBatchAt = .now
            return (state.waiting, state.viewers.values.map(\.subscription))
        }
        for continuation in waiting { continuation.resume() }
        for subscription in viewers { subscription.wake() }
    }

    /// Applies the announced states, renders the runners that changed, and wakes every spectator.
    private func applyBatch() {
        guard
            let (records, board) = state.withLock({ state -> ([RunnerStateRecord], LiveBoard)? in
                guard let board = state.board else { return nil }
                defer { state.pending = [] }
                return (state.pending, board)
            })
        else { return }
        var updated = board
        let changed = updated.apply(records)
        let moved = changed.moved.map { ($0.runnerId, wire.state($0)) }
        let reranked = changed.reranked.map { ($0.runnerId, wire.state($0), wire.rank($0)) }
        let viewers = state.withLock { state -> [LiveRunHub.Subscription] in
            state.lastBatchAt = .now
            guard !changed.isEmpty else { return [] }
            state.board = updated
            state.batch += 1
            for (runner, bytes) in moved {
                state.rendered[runner] = bytes
                state.changedIn[runner] = state.batch
            }
            for (runner, bytes, rank) in reranked {
                state.rendered[runner] = bytes  // for spectators that have not had its last change yet
                state.renderedRank[runner] = rank
                state.rerankedIn[runner] = state.batch
            }
            return state.viewers.values.map(\.subscription)
        }
        for subscription in viewers { subscription.wake() }
    }

    /// What `subscription` should send next: the snapshot if it has not had the current board's,
    /// else every runner changed since its last message (nil: nothing new).
    func message(for subscription: LiveRunHub.Subscription) -> ByteBuffer? {
        state.withLock { state in
            let key = ObjectIdentifier(subscription)
            guard let board = state.board, var viewer = state.viewers[key] else { return nil }
            defer { state.viewers[key] = viewer }
            if viewer.generation != state.generation {
                viewer.generation = state.generation
                viewer.seen = state.batch
                return snapshot(&state, board: board)
            }
            guard viewer.seen < state.batch else { return nil }
            defer { viewer.seen = state.batch }
            if state.sharedUpdates.to != state.batch { state.sharedUpdates = (state.batch, [:]) }
            let since = viewer.seen
            if let shared = state.sharedUpdates.from[since] { return shared }
            var runners: [ByteBuffer] = [], ranks: [ByteBuffer] = []
            for runner in board.ranked {
                if (state.changedIn[runner.runnerId] ?? 0) > since {
                    state.rendered[runner.runnerId].map { runners.append($0) }
                } else if (state.rerankedIn[runner.runnerId] ?? 0) > since {
                    state.renderedRank[runner.runnerId].map { ranks.append($0) }
                }
            }
            let message = wire.update(runners: runners, ranks: ranks)
            state.sharedUpdates.from[since] = message
            return message
        }
    }

    private func snapshot(_ state: inout State, board: LiveBoard) -> ByteBuffer {
        var event = board.event
        event.phase = event.phase(at: Date())
        if let shared = state.sharedSnapshot, shared.generation == state.generation, shared.batch == state.batch, shared.phase == event.phase {
            return shared.message
        }
        let message = wire.snapshot(event: event, runners: board.ranked.compactMap { state.rendered[$0.runnerId] })
        state.sharedSnapshot = (state.generation, state.batch, event.phase, message)
        return message
    }
}

extension LiveAnnouncement {
    /// Every announcement goes through this one decoder (hundreds a second at a big event).
    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return decoder
    }()

    /// A runner's new state, or (nil state) a change of the event or its roster.
    static func decode(_ payload: String) -> (runId: UUID, state: RunnerStateRecord?)? {
        let data = Data(payload.utf8)
        if let announcement = try? decoder.decode(LiveAnnouncement.self, from: data) { return (announcement.runId, announcement.record) }
        if let change = try? decoder.decode(RunEventChange.self, from: data) { return (change.runId, nil) }
        return nil
    }

    var record: RunnerStateRecord {
        RunnerStateRecord(
            runnerId: runnerId, displayName: displayName, lastFixAt: lastFixAt, latitude: latitude, longitude: longitude,
            distanceMeters: distanceMeters, firstFixAt: firstFixAt, offCourse: offCourse, finishedAt: finishedAt, droppedFixes: 0
        )
    }
}

/// `{ "runId": …, "event": true }`: the event or its roster changed (`RunEventStore`).
private struct RunEventChange: Decodable {
    var runId: UUID
    var event: Bool
}
