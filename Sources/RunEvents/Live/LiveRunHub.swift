import Data4HelpCore
import DatabaseLink
import Foundation
import NIOCore
import Synchronization

/// How the live view goes on the wire. The hub renders each runner's state once per change and
/// hands the same bytes to every spectator; the HTTP layer decides what the bytes are.
package protocol LiveWireFormat: Sendable {
    /// Whether a runner's state carries its rank. If it does, a runner whose state is sent needs
    /// no rank entry; if not, every rank change is sent as a rank entry.
    var stateCarriesRank: Bool { get }
    /// Whether a state names its runner. If not (it names the runner's index only), a runner the
    /// board did not know means a new snapshot for every spectator.
    var stateNamesRunner: Bool { get }
    /// One runner's state; `index` is the runner's on the board (`LiveBoard.indices`). An empty
    /// buffer leaves the runner out of the lists (a format that sends only runners with a position).
    func state(_ state: RunnerState, index: Int, of event: RunEvent) -> ByteBuffer
    /// The first message on a connection (and after the event or its roster changed): `event`
    /// (the board's, in its phase now), the board's runners (their indices and ranking), and
    /// `runners`, every runner's rendered state, leader first.
    func snapshot(_ board: LiveBoard, event: RunEvent, runners: [ByteBuffer]) -> ByteBuffer
    /// A runner's rank as a rank entry (for a runner whose state is not in the message).
    func rank(_ state: RunnerState, index: Int) -> ByteBuffer
    /// The leaders' indices, leader first (empty: the format does not send them).
    func leaders(_ indices: [Int]) -> ByteBuffer
    /// Whether a message that brings the whole field (a spectator's every message, or a
    /// follower's field message) says how the order changed since the spectator's previous such
    /// message (`LiveOrderChange`) instead of a rank entry for every runner whose rank changed.
    /// In a dense field one runner's move changes the ranks of all those it passed: in
    /// `bench live`'s city race the rank entries were about half of a field message's bytes.
    var sendsOrderChanges: Bool { get }
    /// The runners whose state changed, the rank entries, how the order changed (only where
    /// `sendsOrderChanges`, in a message that brings the whole field, and when it did), and the
    /// leaders when they changed.
    func update(runners: [ByteBuffer], ranks: [ByteBuffer], order: LiveOrderChange?, leaders: ByteBuffer?) -> ByteBuffer
}

/// How the order of the whole field changed since a spectator's previous message that brought
/// it.
package enum LiveOrderChange: Sendable, Equatable {
    /// The runners that moved in the order, with their new ranks, leader first
    /// (`LiveBoard.moves`): the others keep their order relative to each other.
    case moves([LiveBoard.Move])
    /// The whole order, leader first, should the hub not hold the order the spectator has (a
    /// safeguard: each spectator holds the order it was last brought while it is connected).
    case whole([Int])
}

/// What one spectator asked to see: by default every runner at every batch; or the runners they
/// follow at every batch and the rest of the field at most every `fieldEvery` (on a grid of
/// that period, offset per spectator by a whole number of batch intervals: the spectators with
/// the same period and offset share the field's message), with the leaders whenever they change.
package struct LiveView: Sendable, Equatable {
    package var follow: Set<UUID>
    /// Nil: the whole field at every batch.
    package var fieldEvery: Duration?

    package init(follow: Set<UUID> = [], fieldEvery: Duration? = nil) {
        self.follow = follow
        self.fieldEvery = fieldEvery
    }

    package static let wholeField = LiveView()
    /// RaceJoy lets a spectator follow up to 50 runners.
    package static let maximumFollowed = 50
    /// How many leaders a spectator is sent whenever they change.
    package static let leaderCount = 10
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
    private let now: @Sendable () -> Date
    private let runs = Mutex<[UUID: LiveRun]>([:])

    /// - Parameters:
    ///   - interval: the shortest time between two batches of one event (the most an update waits).
    ///   - now: the wall clock the field periods' grid is laid on (a test's own).
    ///   - load: the event and its runners' stored states (`LivePositions.snapshot`).
    package init(
        interval: Duration = .milliseconds(50), wire: any LiveWireFormat, now: @escaping @Sendable () -> Date = { Date() },
        load: @escaping Loader
    ) {
        self.interval = interval
        self.wire = wire
        self.now = now
        self.load = load
    }

    /// Starts watching an event. `wake` is called whenever the spectator has something new to
    /// take with `Subscription.next()` — first the snapshot (called once before this returns), then
    /// after each batch. It must only schedule the taking (it runs under the hub's batching loop),
    /// and may be called again before the previous message was taken: wake-ups coalesce.
    /// Throws `RunEventError.notFound` for an unknown event.
    package func subscribe(to runId: UUID, view: LiveView = .wholeField, wake: @escaping @Sendable () -> Void) async throws -> Subscription {
        let subscription = runs.withLock { runs in
            let run = runs[runId] ?? LiveRun(id: runId, interval: interval, wire: wire, now: now, load: load)
            runs[runId] = run
            return run.add(view: view, wake: wake)
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
        // Every instance hears every announcement, and each hub (one per protocol version) is
        // told of it: one with no event watched skips the decoding.
        guard runs.withLock({ !$0.isEmpty }), let announcement = LiveAnnouncement.decode(payload),
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

        /// What to do now.
        package enum Take: Sendable {
            /// Send this, then take again once it is written.
            case message(ByteBuffer)
            /// Nothing new (or the spectator left): wait for the next wake-up.
            case nothing
            /// Nothing now, but the field has news that is due after this long: take again then
            /// (the hub does not wake a spectator for the field it deferred).
            case fieldIn(Duration)
        }

        /// The message to send now — the snapshot first, then every runner changed since the
        /// previous one (or, between field periods, the followed runners and leaders that
        /// changed). Take the next one when this one has been written: what waits meanwhile is
        /// each runner's latest state.
        package func take() -> Take {
            finished.load(ordering: .relaxed) ? .nothing : run.take(for: self)
        }

        /// `take()`'s message, nil for anything else.
        package func next() -> ByteBuffer? {
            if case .message(let message) = take() { message } else { nil }
        }

        /// Follow other runners, or change the field's rate: the next message is a snapshot.
        package func change(to view: LiveView) {
            run.change(self, to: view)
            wake()
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
    private let now: @Sendable () -> Date
    private let load: LiveRunHub.Loader

    /// One spectator, changed only under the run's lock (a class, so that a take changes it in
    /// place rather than copying it out of the dictionary and back).
    private final class Viewer {
        let subscription: LiveRunHub.Subscription
        var view: LiveView
        /// The followed runners' indices on the board of its last snapshot, in index order.
        var followed: [Int] = []
        /// The board generation this spectator has been sent (0: nothing yet), the batch its
        /// last field message brought it to, and the batch of its last message of any kind.
        var generation = 0
        var seen: UInt64 = 0
        var followSeen: UInt64 = 0
        /// The field period (on the shared grid) of its last field message.
        var fieldPeriod: Int64 = 0
        /// It was told to come back for the field (`Take.fieldIn`) and has not yet.
        var fieldDeferred = false
        /// Which of the field grid's offsets it takes its field at (see `LiveRun.period`).
        let slot: Int

        init(subscription: LiveRunHub.Subscription, view: LiveView, slot: Int) {
            self.subscription = subscription
            self.view = view
            self.slot = slot
        }

        /// Whether a batch that moved the runners marked in `moved` (by index) is worth waking it
        /// for (a followed runner whose rank alone changed is not, nor new leaders: see
        /// `LiveRun.followed`).
        func wantsWake(moved: [Bool]) -> Bool {
            guard view.fieldEvery != nil else { return true }
            return !fieldDeferred || followed.contains { $0 < moved.count && moved[$0] }
        }
    }

    private struct State {
        var board: LiveBoard?
        /// Bumped by every (re)load: spectators then get a new snapshot.
        var generation = 0
        var loadError: (any Error)?
        var reloadWanted = false
        /// Announced states not applied yet.
        var pending: [RunnerStateRecord] = []
        /// By runner index (the board's): each runner's full state as it is now and the batch
        /// that last changed it (not counting rank-only changes)…
        var rendered: [ByteBuffer] = []
        var changedIn: [UInt64] = []
        /// …and its rank entry, the batch that last changed its rank alone, and the batch that
        /// last changed its rank at all.
        var renderedRank: [ByteBuffer?] = []
        var rerankedIn: [UInt64] = []
        var rankChangedIn: [UInt64] = []
        /// The leaders' indices, rendered, and the batch that last changed them.
        var leaders: [Int] = []
        var renderedLeaders: ByteBuffer?
        var leadersChangedIn: UInt64 = 0
        /// The newest batch.
        var batch: UInt64 = 0
        var lastBatchAt: ContinuousClock.Instant = .now - .seconds(3_600)
        /// The updates to the newest batch, by the batch they start from: built by the first
        /// spectator that needs one and shared with the others at the same point (most are one
        /// batch behind; a loaded machine spreads them over a few).
        var sharedUpdates: (to: UInt64, from: [UInt64: ByteBuffer]) = (0, [:])
        var sharedSnapshot: (generation: Int, batch: UInt64, phase: RunPhase, message: ByteBuffer)?
        /// Where the format sends order changes: the order at each batch some spectator was last
        /// brought the whole field at (its `seen`), and how many spectators hold it.
        var orders: [UInt64: (order: [Int], holders: Int)] = [:]
        var viewers: [ObjectIdentifier: Viewer] = [:]
        /// Spectators added so far (each takes the next slot of the field's grid).
        var added = 0
        var waiting: [CheckedContinuation<Void, any Error>] = []
        /// The worker (loading and batching) is running.
        var working = false

        /// Makes room for runners that joined the board (their indices follow the known ones).
        mutating func grow(to count: Int) {
            let missing = count - rendered.count
            guard missing > 0 else { return }
            rendered.append(contentsOf: repeatElement(ByteBuffer(), count: missing))
            changedIn.append(contentsOf: repeatElement(0, count: missing))
            renderedRank.append(contentsOf: repeatElement(nil, count: missing))
            rerankedIn.append(contentsOf: repeatElement(0, count: missing))
            rankChangedIn.append(contentsOf: repeatElement(0, count: missing))
        }

        /// `viewer` now has the whole field as of the newest batch, whose order is `order`.
        mutating func bring(_ viewer: Viewer, order: [Int], keepingOrders: Bool) {
            release(viewer.seen)
            viewer.seen = batch
            if keepingOrders { orders[batch, default: (order, 0)].holders += 1 }
        }

        /// A spectator no longer holds the order of `batch`.
        mutating func release(_ batch: UInt64) {
            guard let held = orders[batch] else { return }
            if held.holders > 1 { orders[batch]?.holders -= 1 } else { orders.removeValue(forKey: batch) }
        }
    }

    private let state = Mutex(State())

    init(id: UUID, interval: Duration, wire: any LiveWireFormat, now: @escaping @Sendable () -> Date, load: @escaping LiveRunHub.Loader) {
        self.id = id
        self.interval = interval
        self.wire = wire
        self.now = now
        self.load = load
    }

    var subscriberCount: Int { state.withLock { $0.viewers.count } }

    /// Viewers behind the newest batch or board generation.
    var dueCount: Int {
        state.withLock { state in state.viewers.values.count { $0.generation < state.generation || $0.seen < state.batch } }
    }

    func add(view: LiveView, wake: @escaping @Sendable () -> Void) -> LiveRunHub.Subscription {
        let subscription = LiveRunHub.Subscription(run: self, wake: wake)
        state.withLock { state in
            state.viewers[ObjectIdentifier(subscription)] = Viewer(subscription: subscription, view: view, slot: state.added)
            state.added += 1
        }
        return subscription
    }

    /// A new view starts with a snapshot, like a new connection.
    func change(_ subscription: LiveRunHub.Subscription, to view: LiveView) {
        state.withLock { state in
            guard let viewer = state.viewers[ObjectIdentifier(subscription)] else { return }
            viewer.view = view
            viewer.generation = 0
            viewer.fieldDeferred = false
        }
    }

    /// Answers how many spectators remain.
    func remove(_ subscription: LiveRunHub.Subscription) -> Int {
        state.withLock { state in
            if let viewer = state.viewers.removeValue(forKey: ObjectIdentifier(subscription)) { state.release(viewer.seen) }
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
        let rendered = loaded.states.enumerated().map { index, runner in wire.state(runner, index: index, of: loaded.event) }
        let leaders = Array(loaded.order.prefix(LiveView.leaderCount))
        let renderedLeaders = wire.leaders(leaders)
        let (waiting, viewers) = state.withLock { state in
            defer { state.waiting = [] }
            state.board = loaded
            state.generation += 1
            state.batch += 1
            let count = rendered.count
            state.rendered = rendered
            state.changedIn = Array(repeating: state.batch, count: count)
            state.renderedRank = Array(repeating: nil, count: count)
            state.rerankedIn = Array(repeating: 0, count: count)
            state.rankChangedIn = Array(repeating: 0, count: count)
            (state.leaders, state.renderedLeaders, state.leadersChangedIn) = (leaders, renderedLeaders, state.batch)
            state.lastBatchAt = .now
            return (state.waiting, state.viewers.values.map(\.subscription))
        }
        for continuation in waiting { continuation.resume() }
        for subscription in viewers { subscription.wake() }
    }

    /// Applies the announced states, renders the runners that changed, and wakes the spectators
    /// that have something to take.
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
        let count = updated.states.count
        let moved = changed.moved.map { index in (index, wire.state(updated.states[index], index: index, of: updated.event)) }
        // A runner whose rank alone changed is rendered again only where its state carries the rank.
        var rankOnly = [Bool](repeating: false, count: count)
        if wire.stateCarriesRank {
            for index in changed.reranked { rankOnly[index] = true }
        }
        let ranks = changed.ranksChanged.map { index in
            let runner = updated.states[index]
            return (index, rankOnly[index] ? wire.state(runner, index: index, of: updated.event) : nil, wire.rank(runner, index: index))
        }
        let leaders = Array(updated.order.prefix(LiveView.leaderCount))
        var movedNow = [Bool](repeating: false, count: count)
        for index in changed.moved { movedNow[index] = true }
        let viewers = state.withLock { state -> [LiveRunHub.Subscription] in
            state.lastBatchAt = .now
            if changed.joined, !wire.stateNamesRunner { state.reloadWanted = true }  // spectators learn the new runners' indices from a snapshot
            guard !changed.isEmpty else { return [] }
            state.board = updated
            state.batch += 1
            state.grow(to: count)
            for (index, bytes) in moved {
                state.rendered[index] = bytes
                state.changedIn[index] = state.batch
            }
            for (index, bytes, rank) in ranks {
                if let bytes {
                    state.rendered[index] = bytes  // for spectators that have not had its last change yet (when states carry ranks)
                    state.rerankedIn[index] = state.batch
                }
                state.renderedRank[index] = rank
                state.rankChangedIn[index] = state.batch
            }
            if leaders != state.leaders {
                state.leaders = leaders
                state.renderedLeaders = wire.leaders(leaders)
                state.leadersChangedIn = state.batch
            }
            return state.viewers.values.filter { $0.wantsWake(moved: movedNow) }.map(\.subscription)
        }
        for subscription in viewers { subscription.wake() }
    }

    /// What `subscription` should do next: send the snapshot if it has not had the current
    /// board's; else, when its field is due, every runner changed since its last field message
    /// (shared with every spectator at the same point); else the followed runners that moved
    /// since its last message (and the leaders, if they changed).
    func take(for subscription: LiveRunHub.Subscription) -> LiveRunHub.Subscription.Take {
        state.withLock { state in
            guard let viewer = state.viewers[ObjectIdentifier(subscription)], let board = state.board else { return .nothing }
            if viewer.generation != state.generation {
                viewer.generation = state.generation
                state.bring(viewer, order: board.order, keepingOrders: wire.sendsOrderChanges)
                viewer.followSeen = state.batch
                viewer.followed = viewer.view.follow.compactMap { board.indices[$0] }.sorted()
                if let every = viewer.view.fieldEvery { viewer.fieldPeriod = period(every, slot: viewer.slot).current }
                return .message(snapshot(&state, board: board))
            }
            guard viewer.seen < state.batch else { return .nothing }
            if let every = viewer.view.fieldEvery {
                let (period, next) = period(every, slot: viewer.slot)
                if period <= viewer.fieldPeriod {
                    if viewer.followSeen < state.batch, let message = followed(&state, viewer.followed, since: viewer.followSeen) {
                        viewer.followSeen = state.batch
                        return .message(message)
                    }
                    viewer.fieldDeferred = true
                    return .fieldIn(next)
                }
                viewer.fieldPeriod = period
                viewer.fieldDeferred = false
            }
            let since = viewer.seen
            if state.sharedUpdates.to != state.batch { state.sharedUpdates = (state.batch, [:]) }
            let message: ByteBuffer
            if let shared = state.sharedUpdates.from[since] {
                message = shared
            } else {
                message = update(&state, runners: board.order, since: since, field: board.order)
                state.sharedUpdates.from[since] = message
            }
            state.bring(viewer, order: board.order, keepingOrders: wire.sendsOrderChanges)  // after the update: it may need the order `since`
            viewer.followSeen = state.batch
            return .message(message)
        }
    }

    /// The period of `every` that now falls in for the spectator in `slot`, and how long until
    /// the next one starts. The periods are a grid from the Unix epoch, offset by a whole number
    /// of batch intervals: the spectators are spread over the period's intervals in the order
    /// they came (`slot`), and those of one offset share their field's message. With every
    /// spectator on one grid, the field's messages of all of them were due at the same moment:
    /// in `bench live`'s city race, 5,000 messages of 40–57 KB each second, and a post sent in
    /// the quarter second after it waited 293 ms at the median against 56 ms in the other
    /// quarters (the same event loops read the posts).
    private func period(_ every: Duration, slot: Int) -> (current: Int64, next: Duration) {
        let milliseconds = Self.milliseconds(every), slots = max(1, milliseconds / Self.milliseconds(interval))
        let offset = Int64(slot) % slots * (milliseconds / slots)
        let now = (Int64(exactly: (now().timeIntervalSince1970 * 1_000).rounded(.down)) ?? 0) - offset
        return (now / milliseconds, .milliseconds(milliseconds - now % milliseconds))
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        max(1, duration.components.seconds * 1_000 + duration.components.attoseconds / 1_000_000_000_000_000)
    }

    /// The states and rank entries of `runners` (indices) changed since `since`, and the leaders
    /// if they changed. `field`: the message brings the whole field, whose order is now this —
    /// where the format sends order changes, they replace the rank entries.
    private func update(_ state: inout State, runners: [Int], since: UInt64, field: [Int]? = nil) -> ByteBuffer {
        var states: [ByteBuffer] = [], ranks: [ByteBuffer] = []
        let carriesRank = wire.stateCarriesRank
        let orderChanges = wire.sendsOrderChanges && field != nil
        for index in runners {
            let moved = state.changedIn[index] > since
            if moved, state.rendered[index].readableBytes > 0 { states.append(state.rendered[index]) }
            guard !orderChanges else { continue }
            let reranked = carriesRank ? state.rerankedIn[index] : state.rankChangedIn[index]
            if reranked > since, !(moved && carriesRank), let rank = state.renderedRank[index] { ranks.append(rank) }
        }
        var order: LiveOrderChange?
        if orderChanges, let field {
            if let held = state.orders[since]?.order {
                let moves = LiveBoard.moves(from: held, to: field)
                order = moves.isEmpty ? nil : .moves(moves)
            } else {
                order = .whole(field)
            }
        }
        return wire.update(
            runners: states, ranks: ranks, order: order, leaders: state.leadersChangedIn > since ? state.renderedLeaders : nil)
    }

    /// `update` for the followed runners (indices) whose state or rank changed since `since`, with
    /// the leaders if they changed; nil unless one of them moved. What others change waits for
    /// the runner's next move or the field's message, at most a field period:
    /// - a followed runner's rank that others changed (passing them, or falling behind them): in a
    ///   dense pack it changes at most batches (about 3 % of the messages in `bench live`'s city
    ///   race);
    /// - the leaders: at a mass start the top ten change at every batch while the field's first
    ///   fixes arrive. A message of the leaders alone for every follower at every such batch was
    ///   half to two thirds of the city race's messages, and in its first seconds the posts fell
    ///   behind (see the README's *Track4Run*).
    private func followed(_ state: inout State, _ follow: [Int], since: UInt64) -> ByteBuffer? {
        guard follow.contains(where: { index in index < state.changedIn.count && state.changedIn[index] > since }) else { return nil }
        let changed = follow.filter { index in index < state.changedIn.count && max(state.changedIn[index], state.rankChangedIn[index]) > since }
        return update(&state, runners: changed, since: since)
    }

    private func snapshot(_ state: inout State, board: LiveBoard) -> ByteBuffer {
        var event = board.event
        event.phase = event.phase(at: Date())
        if let shared = state.sharedSnapshot, shared.generation == state.generation, shared.batch == state.batch, shared.phase == event.phase {
            return shared.message
        }
        let message = wire.snapshot(board, event: event, runners: board.order.map { state.rendered[$0] })
        state.sharedSnapshot = (state.generation, state.batch, event.phase, message)
        return message
    }
}
