import Data4HelpCore
import DatabaseLink
import Foundation
import NIOCore
import RunEvents
import Synchronization
import Testing

@Suite("Live fan-out: batches rendered once, shared bytes, slow spectators coalesced")
struct LiveRunHubTests {
    static let startsAt = Date(timeIntervalSince1970: 1_800_000_000)
    static let runners = (0..<12).map { UUID(uuidString: "00000000-0000-0000-0000-" + String(format: "%012d", $0))! }

    /// A wire format that says what it was asked to render: `name@metres#rank`, `name#rank`,
    /// `U[states|ranks]`, `S[…]`.
    final class CountingWire: LiveWireFormat {
        let states = Mutex(0)
        let updates = Mutex(0)
        let stateCarriesRank: Bool
        let sendsOrderChanges: Bool
        var stateNamesRunner: Bool { true }

        /// `stateCarriesRank` false: like version 2, every rank change is a rank entry and the
        /// leaders are sent as `L[…]` when they change. `sendsOrderChanges`: like version 2, a
        /// message that brings the whole field says how the order changed (`|M index>rank,…`,
        /// or `|O` and the whole order) instead.
        init(stateCarriesRank: Bool = true, sendsOrderChanges: Bool = false) {
            self.stateCarriesRank = stateCarriesRank
            self.sendsOrderChanges = sendsOrderChanges
        }

        func state(_ state: RunnerState, index: Int, of event: RunEvent) -> ByteBuffer {
            states.withLock { $0 += 1 }
            return ByteBuffer(string: "\(state.displayName)@\(Int(state.distanceMeters))" + (stateCarriesRank ? "#\(state.rank ?? 0)" : ""))
        }

        func snapshot(_ board: LiveBoard, event: RunEvent, runners: [ByteBuffer]) -> ByteBuffer {
            ByteBuffer(string: "S[" + runners.map { String(buffer: $0) }.joined(separator: ",") + "]")
        }

        func rank(_ state: RunnerState, index: Int) -> ByteBuffer {
            ByteBuffer(string: "\(state.displayName)#\(state.rank ?? 0)")
        }

        func leaders(_ indices: [Int]) -> ByteBuffer {
            ByteBuffer(string: "L" + indices.map(String.init).joined(separator: ","))
        }

        func update(runners: [ByteBuffer], ranks: [ByteBuffer], order: LiveOrderChange?, leaders: ByteBuffer?) -> ByteBuffer {
            updates.withLock { $0 += 1 }
            func list(_ items: [ByteBuffer]) -> String { items.map { String(buffer: $0) }.joined(separator: ",") }
            let leaders = stateCarriesRank ? "" : leaders.map { "|" + String(buffer: $0) } ?? ""
            let order =
                switch order {
                case .moves(let moves): "|M" + moves.map { "\($0.index)>\($0.rank)" }.joined(separator: ",")
                case .whole(let order): "|O" + order.map(String.init).joined(separator: ",")
                case nil: ""
                }
            return ByteBuffer(string: "U[" + list(runners) + "|" + list(ranks) + order + leaders + "]")
        }
    }

    final class Counter: Sendable {
        private let count = Mutex(0)
        func add() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    /// A hub over one in-memory event whose stored states are `stored` (the loader counts its calls).
    static func hub(
        wire: CountingWire, loads: Counter, stored: [RunnerStateRecord] = [], now: @escaping @Sendable () -> Date = { Date() }
    ) throws -> (LiveRunHub, UUID) {
        let id = UUID()
        let path = try GeoPath(points: [GeoPoint(latitude: 45.4755, longitude: 9.1725), GeoPoint(latitude: 45.4845, longitude: 9.1725)])
        let event = RunEvent(id: id, name: "Test", startsAt: startsAt, endsAt: startsAt.addingTimeInterval(3600), path: path)
        let hub = LiveRunHub(interval: .milliseconds(20), wire: wire, now: now) { runId in
            guard runId == id else { throw RunEventError.notFound }
            loads.add()
            return LiveBoard(event: event, records: stored)
        }
        return (hub, id)
    }

    static func state(_ runner: Int, metres: Double, second: Double) -> RunnerStateRecord {
        RunnerStateRecord(
            runnerId: runners[runner], displayName: "R\(runner)", lastFixAt: startsAt.addingTimeInterval(second),
            latitude: 45.4755, longitude: 9.1725, distanceMeters: metres, firstFixAt: startsAt.addingTimeInterval(1),
            offCourse: false, finishedAt: nil, droppedFixes: 0
        )
    }

    /// What `receive` gets from PostgreSQL for a runner's new state (what a post announces).
    static func announcement(_ runId: UUID, _ record: RunnerStateRecord) -> String {
        LiveAnnouncement(runId: runId, state: record).payload
    }

    /// The same as earlier releases announced it (JSON), for instances of both side by side.
    static func jsonAnnouncement(_ runId: UUID, _ record: RunnerStateRecord) -> String {
        let time = record.lastFixAt.map { Int64($0.timeIntervalSince1970 * 1000) }
        return """
            {"runId":"\(runId)","runnerId":"\(record.runnerId)","displayName":"\(record.displayName)","latitude":45.4755,"longitude":9.1725,\
            "lastFixAt":\(time!),"firstFixAt":\(Int64(startsAt.timeIntervalSince1970 * 1000) + 1000),"distanceMeters":\(record.distanceMeters),"offCourse":false}
            """
    }

    @Test(.timeLimit(.minutes(20))) func anAnnouncementInTheJSONOfEarlierReleasesIsStillApplied() async throws {
        let wire = CountingWire(), loads = Counter()
        let (hub, id) = try Self.hub(wire: wire, loads: loads, stored: [Self.state(0, metres: 100, second: 30)])
        var spectator = try await Watcher.watch(hub, id)
        defer { hub.unsubscribe(spectator.subscription) }
        #expect(await spectator.next().map { String(buffer: $0) } == "S[R0@100#1]")
        hub.receive(Self.jsonAnnouncement(id, Self.state(0, metres: 120, second: 35)))
        #expect(await spectator.next().map { String(buffer: $0) } == "U[R0@120#1|]")
        hub.receive(Self.announcement(id, Self.state(1, metres: 150, second: 36)))
        #expect(await spectator.next().map { String(buffer: $0) } == "U[R1@150#1|R0#2]")
    }

    @Test(.timeLimit(.minutes(20))) func spectatorsAtTheSamePointShareOneRenderedUpdate() async throws {
        let wire = CountingWire(), loads = Counter()
        let (hub, id) = try Self.hub(wire: wire, loads: loads, stored: [Self.state(0, metres: 100, second: 30)])
        var a = try await Watcher.watch(hub, id), b = try await Watcher.watch(hub, id)
        #expect(await a.next().map { String(buffer: $0) } == "S[R0@100#1]")
        #expect(await b.next().map { String(buffer: $0) } == "S[R0@100#1]")
        #expect(loads.value == 1)  // one load for both spectators

        let rendered = wire.states.withLock { $0 }
        hub.receive(Self.announcement(id, Self.state(1, metres: 150, second: 30)))
        let (x, y) = (await a.next().map { String(buffer: $0) }, await b.next().map { String(buffer: $0) })
        // R1 overtakes: its own state and (a rank entry only) R0's new rank, rendered once for both.
        #expect(x == "U[R1@150#1|R0#2]" && y == x)
        #expect(wire.states.withLock { $0 } == rendered + 2 && wire.updates.withLock { $0 } == 1)

        // A spectator arriving now gets R0's full state with its new rank.
        var c = try await Watcher.watch(hub, id)
        #expect(await c.next().map { String(buffer: $0) } == "S[R1@150#1,R0@100#2]")
        hub.unsubscribe(c.subscription)
        hub.unsubscribe(a.subscription)
        hub.unsubscribe(b.subscription)
        #expect(hub.spectatorCount == 0)
    }

    @Test(.timeLimit(.minutes(20))) func aSlowSpectatorGetsEachRunnersLatestStateOnce() async throws {
        let wire = CountingWire(), loads = Counter()
        let (hub, id) = try Self.hub(wire: wire, loads: loads)
        var f = try await Watcher.watch(hub, id), s = try await Watcher.watch(hub, id)
        defer { hub.unsubscribe(f.subscription); hub.unsubscribe(s.subscription) }
        #expect(await f.next().map { String(buffer: $0) } == "S[]")
        #expect(await s.next().map { String(buffer: $0) } == "S[]")

        // Ten seconds of three runners while the slow spectator reads nothing: the fast one
        // sees every batch, the slow one holds no queue.
        let runners = Task {
            for second in 1...10 {
                for runner in 0..<3 {
                    hub.receive(Self.announcement(id, Self.state(runner, metres: Double(second * (3 + runner)), second: Double(second))))
                }
                try await Task.sleep(for: .milliseconds(30))
            }
        }
        var fastMessages = 0, latest: [String: String] = [:]
        while latest.values.sorted() != ["R0@30#3", "R1@40#2", "R2@50#1"], let message = await f.next() {
            fastMessages += 1
            let parts = String(buffer: message).dropFirst(2).dropLast().split(separator: "|", omittingEmptySubsequences: false)
            for state in parts[0].split(separator: ",") { latest[String(state.prefix(2))] = String(state) }
            for entry in parts[1].split(separator: ",") {  // "R0#2": a new rank for the state shown
                let name = String(entry.prefix(2))
                latest[name] = latest[name].map { String($0.prefix { $0 != "#" }) + entry.dropFirst(2) }
            }
        }
        try await runners.value
        #expect(fastMessages >= 5)
        // The slow spectator's next message: each runner once, as they are now.
        #expect(await s.next().map { String(buffer: $0) } == "U[R2@50#1,R1@40#2,R0@30#3|]")

        // An older state crossing a newer one is ignored.
        hub.receive(Self.announcement(id, Self.state(0, metres: 5, second: 2)))
        hub.receive(Self.announcement(id, Self.state(0, metres: 33, second: 11)))
        #expect(await s.next().map { String(buffer: $0) } == "U[R0@33#3|]")
    }

    @Test(.timeLimit(.minutes(20))) func aChangeOfTheEventSendsEverySpectatorANewSnapshot() async throws {
        let wire = CountingWire(), loads = Counter()
        let (hub, id) = try Self.hub(wire: wire, loads: loads, stored: [Self.state(0, metres: 10, second: 5)])
        var messages = try await Watcher.watch(hub, id)
        defer { hub.unsubscribe(messages.subscription) }
        #expect(await messages.next().map { String(buffer: $0) } == "S[R0@10#1]")
        hub.receive(#"{"runId":"\#(id)","event":true}"#)
        #expect(await messages.next().map { String(buffer: $0) } == "S[R0@10#1]")
        #expect(loads.value == 2)
        // After the listener reconnects (nil), every watched event is read again.
        hub.receive(nil as String?)
        #expect(await messages.next().map { String(buffer: $0) } == "S[R0@10#1]")
        #expect(loads.value == 3)
    }

    /// A spectator following R2 with the field every second, on a clock the test moves: R2's
    /// moves at once, R1's at the next field period, new leaders with R2's next move; a batch
    /// with nothing for it does not even wake it.
    @Test(.timeLimit(.minutes(20))) func aFollowerGetsItsRunnersAtOnceTheLeadersWithThemAndTheFieldEachPeriod() async throws {
        let clock = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let wire = CountingWire(stateCarriesRank: false), loads = Counter(), wakes = Counter()
        let (hub, id) = try Self.hub(
            wire: wire, loads: loads,
            stored: [Self.state(0, metres: 10, second: 5), Self.state(1, metres: 5, second: 5), Self.state(2, metres: 1, second: 5)],
            now: { clock.withLock { $0 } })
        let follower = try await hub.subscribe(to: id, view: LiveView(follow: [Self.runners[2]], fieldEvery: .seconds(1))) { wakes.add() }
        defer { hub.unsubscribe(follower) }
        #expect(follower.next().map { String(buffer: $0) } == "S[R0@10,R1@5,R2@1]")

        /// The next batch's answer (polling: the batch is applied by the hub's own task).
        func afterBatch(_ announce: RunnerStateRecord) async throws -> LiveRunHub.Subscription.Take {
            let before = wire.updates.withLock { $0 } + wire.states.withLock { $0 }
            hub.receive(Self.announcement(id, announce))
            while wire.updates.withLock({ $0 }) + wire.states.withLock({ $0 }) == before { try await Task.sleep(for: .milliseconds(5)) }
            try await Task.sleep(for: .milliseconds(5))
            return follower.take()
        }
        func text(_ take: LiveRunHub.Subscription.Take) -> String {
            switch take {
            case .message(let message): String(buffer: message)
            case .fieldIn(let wait): "field in \(wait)"
            case .nothing: "nothing"
            }
        }

        // R1 moves: nothing for the follower until the field's next period, a second away.
        #expect(text(try await afterBatch(Self.state(1, metres: 6, second: 6))) == "field in 1.0 seconds")
        // R0 moves, no rank changes: the deferred follower is not woken.
        let woken = wakes.value
        _ = try await afterBatch(Self.state(0, metres: 11, second: 6))
        #expect(wakes.value == woken)
        // R2, followed, moves: at once, alone.
        #expect(text(try await afterBatch(Self.state(2, metres: 2, second: 6))) == "U[R2@2|]")
        #expect(text(follower.take()) == "field in 1.0 seconds")
        // The next period: the field since the snapshot, R2 included.
        clock.withLock { $0 += 1 }
        #expect(text(follower.take()) == "U[R0@11,R1@6,R2@2|]")
        #expect(text(follower.take()) == "nothing")
        // R1 passes R0: new leaders, but no followed runner moved: no message (see
        // `newLeadersAloneWaitForTheFollowersField`). They come with R2's next move (by index),
        // then the field waits again.
        clock.withLock { $0 += 0.5 }
        #expect(text(try await afterBatch(Self.state(1, metres: 20, second: 7))) == "field in 0.5 seconds")
        #expect(text(try await afterBatch(Self.state(2, metres: 3, second: 7))) == "U[R2@3||L1,0,2]")
        #expect(text(follower.take()) == "field in 0.5 seconds")
        // Following R0 instead: a new snapshot.
        follower.change(to: LiveView(follow: [Self.runners[0]], fieldEvery: nil))
        #expect(text(follower.take()) == "S[R1@20,R0@11,R2@3]")
    }

    /// The field's periods of two followers are offset by one batch interval (20 ms here): each
    /// spectator takes the next slot, so that the field's messages of thousands are not all due
    /// at one moment.
    @Test(.timeLimit(.minutes(20))) func followersTakeTheFieldAtOffsetsOfOneBatchInterval() async throws {
        let clock = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let wire = CountingWire(stateCarriesRank: false), loads = Counter()
        let (hub, id) = try Self.hub(
            wire: wire, loads: loads, stored: [Self.state(0, metres: 10, second: 5), Self.state(1, metres: 5, second: 5)],
            now: { clock.withLock { $0 } })
        let view = LiveView(follow: [Self.runners[0]], fieldEvery: .seconds(1))
        let first = try await hub.subscribe(to: id, view: view) {}, second = try await hub.subscribe(to: id, view: view) {}
        defer { for subscription in [first, second] { hub.unsubscribe(subscription) } }
        #expect(first.next() != nil && second.next() != nil, "the snapshots")
        func due(_ take: LiveRunHub.Subscription.Take) -> String {
            switch take {
            case .message(let message): String(buffer: message)
            case .fieldIn(let wait): "field in \(wait)"
            case .nothing: "nothing"
            }
        }

        let before = wire.states.withLock { $0 }
        hub.receive(Self.announcement(id, Self.state(1, metres: 6, second: 6)))
        while wire.states.withLock({ $0 }) == before { try await Task.sleep(for: .milliseconds(5)) }
        try await Task.sleep(for: .milliseconds(5))
        #expect(due(first.take()) == "field in 1.0 seconds")
        #expect(due(second.take()) == "field in 0.02 seconds")
        clock.withLock { $0 += 0.02 }
        #expect(due(second.take()) == "U[R1@6|]")
        #expect(due(first.take()) == "field in 0.98 seconds")
    }

    /// New leaders while no followed runner moves reach a follower with its field's message,
    /// and with nothing before it: at a mass start the leaders change at every batch, and a
    /// message of them alone for every follower was most of the city race's messages.
    @Test(.timeLimit(.minutes(20))) func newLeadersAloneWaitForTheFollowersField() async throws {
        let clock = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let wire = CountingWire(stateCarriesRank: false), loads = Counter(), wakes = Counter()
        let (hub, id) = try Self.hub(
            wire: wire, loads: loads,
            stored: [Self.state(0, metres: 10, second: 5), Self.state(1, metres: 5, second: 5), Self.state(2, metres: 1, second: 5)],
            now: { clock.withLock { $0 } })
        let follower = try await hub.subscribe(to: id, view: LiveView(follow: [Self.runners[2]], fieldEvery: .seconds(1))) { wakes.add() }
        defer { hub.unsubscribe(follower) }
        #expect(follower.next() != nil, "the snapshot")
        func afterBatch(_ runner: Int, metres: Double) async throws {
            let before = wire.states.withLock { $0 }
            hub.receive(Self.announcement(id, Self.state(runner, metres: metres, second: 6)))
            while wire.states.withLock({ $0 }) == before { try await Task.sleep(for: .milliseconds(5)) }
            try await Task.sleep(for: .milliseconds(5))
        }
        func isFieldIn(_ take: LiveRunHub.Subscription.Take) -> Bool {
            if case .fieldIn = take { true } else { false }
        }

        // Three batches, each with new leaders: R1 passes R0, then R0 passes R1, then R1 again.
        // The first wakes the follower, which learns its field is due later; the others do not.
        try await afterBatch(1, metres: 20)
        #expect(isFieldIn(follower.take()))
        let woken = wakes.value
        try await afterBatch(0, metres: 30)
        try await afterBatch(1, metres: 40)
        #expect(wakes.value == woken)
        #expect(isFieldIn(follower.take()))
        // The field: both runners' last moves, their ranks and the leaders as they are now.
        clock.withLock { $0 += 1 }
        #expect(follower.next().map { String(buffer: $0) } == "U[R1@40,R0@30|R1#1,R0#2|L1,0,2]")
    }

    /// In a field of twelve (two behind the leaders), a followed runner whose rank alone changes
    /// gets no message of its own (nor a wake-up): the new rank comes with the runner's next move.
    @Test(.timeLimit(.minutes(20))) func aFollowedRunnersRankAloneWaitsForTheirNextMove() async throws {
        let clock = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let wire = CountingWire(stateCarriesRank: false), loads = Counter(), wakes = Counter()
        let (hub, id) = try Self.hub(
            wire: wire, loads: loads, stored: (0..<12).map { Self.state($0, metres: Double(120 - 10 * $0), second: 5) },
            now: { clock.withLock { $0 } })
        let follower = try await hub.subscribe(to: id, view: LiveView(follow: [Self.runners[11]], fieldEvery: .seconds(1))) { wakes.add() }
        defer { hub.unsubscribe(follower) }
        #expect(follower.next() != nil, "the snapshot")
        func afterBatch(_ announce: RunnerStateRecord) async throws {
            let before = wire.states.withLock { $0 }
            hub.receive(Self.announcement(id, announce))
            while wire.states.withLock({ $0 }) == before { try await Task.sleep(for: .milliseconds(5)) }
            try await Task.sleep(for: .milliseconds(5))
        }
        func text(_ take: LiveRunHub.Subscription.Take) -> String {
            switch take {
            case .message(let message): String(buffer: message)
            case .fieldIn: "field later"
            case .nothing: "nothing"
            }
        }

        // R5 moves within its place (every fix at one time: no runner carried past another): the
        // field's, later.
        try await afterBatch(Self.state(5, metres: 71, second: 5))
        #expect(text(follower.take()) == "field later")
        // R10 drops behind R11 (ranks 12 and 11), the leaders stay: no wake-up, no message.
        let woken = wakes.value
        try await afterBatch(Self.state(10, metres: 5, second: 5))
        #expect(wakes.value == woken)
        #expect(text(follower.take()) == "field later")
        // R11 moves: its state, and its rank since its last message.
        try await afterBatch(Self.state(11, metres: 11, second: 5))
        #expect(text(follower.take()) == "U[R11@11|R11#11]")
        // The field's period: everything since the snapshot.
        clock.withLock { $0 += 1 }
        #expect(text(follower.take()) == "U[R5@71,R11@11,R10@5|R11#11,R10#12]")
    }

    /// Where the format sends order changes (version 2): a message that brings the whole field
    /// names the runners that moved in the order since the spectator's previous such message —
    /// one runner passing five is one move, not six rank entries — a follower's other messages
    /// name its runners' ranks, and a spectator that missed a batch gets the moves since what it
    /// has.
    @Test(.timeLimit(.minutes(20))) func aWholeFieldMessageNamesTheFewestRunnersMovedInTheOrder() async throws {
        let clock = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        let wire = CountingWire(stateCarriesRank: false, sendsOrderChanges: true), loads = Counter()
        let (hub, id) = try Self.hub(
            wire: wire, loads: loads, stored: (0..<12).map { Self.state($0, metres: Double(120 - 10 * $0), second: 5) },
            now: { clock.withLock { $0 } })
        var whole = try await Watcher.watch(hub, id)
        let slow = try await hub.subscribe(to: id) {}
        let follower = try await hub.subscribe(to: id, view: LiveView(follow: [Self.runners[11]], fieldEvery: .seconds(1))) {}
        let wholeSubscription = whole.subscription
        defer { for subscription in [wholeSubscription, slow, follower] { hub.unsubscribe(subscription) } }
        #expect(await whole.next() != nil && slow.next() != nil && follower.next() != nil, "the snapshots")

        // R11, last, passes R5 to R10.
        hub.receive(Self.announcement(id, Self.state(11, metres: 75, second: 5)))
        let first = await whole.next().map { String(buffer: $0) }
        #expect(first == "U[R11@75||M11>6|L0,1,2,3,4,11,5,6,7,8]")
        #expect(follower.next().map { String(buffer: $0) } == "U[R11@75|R11#6|L0,1,2,3,4,11,5,6,7,8]")
        // The follower's field, a period later: the same message as the whole field's.
        clock.withLock { $0 += 1 }
        #expect(follower.next().map { String(buffer: $0) } == first)

        // R10 passes everyone: one move against the order of the previous message; two against
        // the snapshot's, which is what the slow spectator has.
        hub.receive(Self.announcement(id, Self.state(10, metres: 130, second: 5)))
        #expect(await whole.next().map { String(buffer: $0) } == "U[R10@130||M10>1|L10,0,1,2,3,4,11,5,6,7]")
        #expect(slow.next().map { String(buffer: $0) } == "U[R10@130,R11@75||M10>1,11>7|L10,0,1,2,3,4,11,5,6,7]")
    }

    @Test(.timeLimit(.minutes(20))) func anUnknownEventIsRefusedAndLeavesNothingBehind() async throws {
        let wire = CountingWire(), loads = Counter()
        let (hub, _) = try Self.hub(wire: wire, loads: loads)
        await #expect(throws: RunEventError.self) { try await hub.subscribe(to: UUID()) {} }
        #expect(hub.spectatorCount == 0)
    }
}

/// A spectator as the socket is one: takes a message after each wake-up, the next when it has
/// "written" the previous one.
struct Watcher {
    let subscription: LiveRunHub.Subscription
    private var wakeups: AsyncStream<Void>.Iterator

    static func watch(_ hub: LiveRunHub, _ id: UUID) async throws -> Watcher {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let subscription = try await hub.subscribe(to: id) { continuation.yield() }
        return Watcher(subscription: subscription, wakeups: stream.makeAsyncIterator())
    }

    mutating func next() async -> ByteBuffer? {
        while await wakeups.next() != nil {
            if let message = subscription.next() { return message }
        }
        return nil
    }
}
