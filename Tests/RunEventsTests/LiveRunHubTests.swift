import DatabaseLink
import Foundation
import NIOCore
import RunEvents
import Synchronization
import Testing

@Suite("Live fan-out: batches rendered once, shared bytes, slow spectators coalesced")
struct LiveRunHubTests {
    static let startsAt = Date(timeIntervalSince1970: 1_800_000_000)
    static let runners = (0..<3).map { UUID(uuidString: "00000000-0000-0000-0000-00000000000\($0)")! }

    /// A wire format that says what it was asked to render: `name@metres#rank`, `U[…]`, `S[…]`.
    final class CountingWire: LiveWireFormat {
        let states = Mutex(0)
        let updates = Mutex(0)

        func state(_ state: RunnerState) -> ByteBuffer {
            states.withLock { $0 += 1 }
            return ByteBuffer(string: "\(state.displayName)@\(Int(state.distanceMeters))#\(state.rank ?? 0)")
        }

        func snapshot(event: RunEvent, runners: [ByteBuffer]) -> ByteBuffer {
            ByteBuffer(string: "S[" + runners.map { String(buffer: $0) }.joined(separator: ",") + "]")
        }

        func update(runners: [ByteBuffer]) -> ByteBuffer {
            updates.withLock { $0 += 1 }
            return ByteBuffer(string: "U[" + runners.map { String(buffer: $0) }.joined(separator: ",") + "]")
        }
    }

    final class Counter: Sendable {
        private let count = Mutex(0)
        func add() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    /// A hub over one in-memory event whose stored states are `stored` (the loader counts its calls).
    static func hub(
        wire: CountingWire, loads: Counter, stored: [RunnerStateRecord] = []
    ) throws -> (LiveRunHub, UUID) {
        let id = UUID()
        let path = try GeoPath(points: [GeoPoint(latitude: 45.4755, longitude: 9.1725), GeoPoint(latitude: 45.4845, longitude: 9.1725)])
        let event = RunEvent(id: id, name: "Test", startsAt: startsAt, endsAt: startsAt.addingTimeInterval(3600), path: path)
        let hub = LiveRunHub(interval: .milliseconds(20), wire: wire) { runId in
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

    /// What `receive` gets from PostgreSQL for a runner's new state.
    static func announcement(_ runId: UUID, _ record: RunnerStateRecord) -> String {
        let time = record.lastFixAt.map { Int64($0.timeIntervalSince1970 * 1000) }
        return """
            {"runId":"\(runId)","runnerId":"\(record.runnerId)","displayName":"\(record.displayName)","latitude":45.4755,"longitude":9.1725,\
            "lastFixAt":\(time!),"firstFixAt":\(Int64(startsAt.timeIntervalSince1970 * 1000) + 1000),"distanceMeters":\(record.distanceMeters),"offCourse":false}
            """
    }

    @Test(.timeLimit(.minutes(1))) func spectatorsAtTheSamePointShareOneRenderedUpdate() async throws {
        let wire = CountingWire(), loads = Counter()
        let (hub, id) = try Self.hub(wire: wire, loads: loads, stored: [Self.state(0, metres: 100, second: 30)])
        let first = try await hub.subscribe(to: id), second = try await hub.subscribe(to: id)
        var a = first.messages.makeAsyncIterator(), b = second.messages.makeAsyncIterator()
        #expect(await a.next().map { String(buffer: $0) } == "S[R0@100#1]")
        #expect(await b.next().map { String(buffer: $0) } == "S[R0@100#1]")
        #expect(loads.value == 1)   // one load for both spectators

        let rendered = wire.states.withLock { $0 }
        hub.receive(Self.announcement(id, Self.state(1, metres: 150, second: 30)))
        let (x, y) = (await a.next().map { String(buffer: $0) }, await b.next().map { String(buffer: $0) })
        // R1 overtakes: its own state and R0's new rank, leader first, rendered once for both.
        #expect(x == "U[R1@150#1,R0@100#2]" && y == x)
        #expect(wire.states.withLock { $0 } == rendered + 2 && wire.updates.withLock { $0 } == 1)
        hub.unsubscribe(first)
        hub.unsubscribe(second)
        #expect(hub.spectatorCount == 0)
    }

    @Test(.timeLimit(.minutes(1))) func aSlowSpectatorGetsEachRunnersLatestStateOnce() async throws {
        let wire = CountingWire(), loads = Counter()
        let (hub, id) = try Self.hub(wire: wire, loads: loads)
        let fast = try await hub.subscribe(to: id), slow = try await hub.subscribe(to: id)
        defer { hub.unsubscribe(fast); hub.unsubscribe(slow) }
        var f = fast.messages.makeAsyncIterator(), s = slow.messages.makeAsyncIterator()
        #expect(await f.next().map { String(buffer: $0) } == "S[]")
        #expect(await s.next().map { String(buffer: $0) } == "S[]")

        // Ten seconds of three runners while the slow spectator reads nothing: the fast one
        // sees every batch, the slow one holds no queue.
        let reader = Task { [f] in
            var f = f, messages = 0, latest: [String: String] = [:]
            while latest.values.sorted() != ["R0@30#3", "R1@40#2", "R2@50#1"], let message = await f.next() {
                messages += 1
                for state in String(buffer: message).dropFirst(2).dropLast().split(separator: ",") { latest[String(state.prefix(2))] = String(state) }
            }
            return messages
        }
        for second in 1...10 {
            for runner in 0..<3 { hub.receive(Self.announcement(id, Self.state(runner, metres: Double(second * (3 + runner)), second: Double(second)))) }
            try await Task.sleep(for: .milliseconds(30))
        }
        let fastMessages = await reader.value
        #expect(fastMessages >= 5)
        // The slow spectator's next message: each runner once, as they are now.
        #expect(await s.next().map { String(buffer: $0) } == "U[R2@50#1,R1@40#2,R0@30#3]")

        // An older state crossing a newer one is ignored.
        hub.receive(Self.announcement(id, Self.state(0, metres: 5, second: 2)))
        hub.receive(Self.announcement(id, Self.state(0, metres: 33, second: 11)))
        #expect(await s.next().map { String(buffer: $0) } == "U[R0@33#3]")
    }

    @Test(.timeLimit(.minutes(1))) func aChangeOfTheEventSendsEverySpectatorANewSnapshot() async throws {
        let wire = CountingWire(), loads = Counter()
        let (hub, id) = try Self.hub(wire: wire, loads: loads, stored: [Self.state(0, metres: 10, second: 5)])
        let spectator = try await hub.subscribe(to: id)
        defer { hub.unsubscribe(spectator) }
        var messages = spectator.messages.makeAsyncIterator()
        #expect(await messages.next().map { String(buffer: $0) } == "S[R0@10#1]")
        hub.receive(#"{"runId":"\#(id)","event":true}"#)
        #expect(await messages.next().map { String(buffer: $0) } == "S[R0@10#1]")
        #expect(loads.value == 2)
        // After the listener reconnects (nil), every watched event is read again.
        hub.receive(nil as String?)
        #expect(await messages.next().map { String(buffer: $0) } == "S[R0@10#1]")
        #expect(loads.value == 3)
    }

    @Test(.timeLimit(.minutes(1))) func anUnknownEventIsRefusedAndLeavesNothingBehind() async throws {
        let wire = CountingWire(), loads = Counter()
        let (hub, _) = try Self.hub(wire: wire, loads: loads)
        await #expect(throws: RunEventError.self) { try await hub.subscribe(to: UUID()) }
        #expect(hub.spectatorCount == 0)
    }
}
