import DatabaseTestSupport
import Foundation
import HummingbirdWSClient
import Logging
import Synchronization

/// A spectator on `GET /api/runs/{id}/live`: a real WebSocket client that keeps every message.
final class LiveSpectator: Sendable {
    private let messages = Mutex<[String]>([])
    private let task: Mutex<Task<Void, any Error>?> = Mutex(nil)
    /// How the connection ended, once it has (refused, failed, closed by the server).
    private let ended = Mutex<String?>(nil)
    private let outgoing: AsyncStream<String>.Continuation

    /// Connects to the server on `port` and reads until `stop()`; `query` (`v=1`,
    /// `follow=…&fieldEveryMs=…`) is added to the path.
    init(port: Int, runId: String, query: String = "") {
        let url = "ws://127.0.0.1:\(port)/api/runs/\(runId)/live" + (query.isEmpty ? "" : "?" + query)
        let (outgoing, send) = AsyncStream.makeStream(of: String.self)
        self.outgoing = send
        let started = Task { [self] in
            do {
                _ = try await WebSocketClient.connect(url: url, logger: TestPostgres.logger) { inbound, outbound, _ in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for await text in outgoing { try await outbound.write(.text(text)) }
                        }
                        for try await message in inbound.messages(maxSize: 1 << 22) {
                            if case .text(let text) = message { self.messages.withLock { $0.append(text) } }
                        }
                        group.cancelAll()
                    }
                }
                ended.withLock { $0 = "the connection was closed" }
            } catch {
                ended.withLock { $0 = "the connection failed: \(String(reflecting: error))" }
                throw error
            }
        }
        task.withLock { $0 = started }
    }

    /// Every text message so far, parsed; version 2's compact messages are read (as the page
    /// reads them) into version 1's shape: states as objects with the runner's id, name and rank.
    var received: [[String: Any]] {
        var decoder = CompactDecoder()
        return messages.withLock { $0 }.compactMap { text in
            guard let message = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else { return nil }
            return message["v"] as? Int == 2 || decoder.started && message["type"] as? String == "update" ? decoder.read(message) : message
        }
    }

    /// The raw text messages.
    var texts: [String] { messages.withLock { $0 } }

    /// Runner states of every update so far, in arrival order.
    var updates: [[String: Any]] { received.filter { $0["type"] as? String == "update" }.flatMap { ($0["runners"] as? [[String: Any]]) ?? [] } }

    /// Rank entries (`{ runnerId, rank }`) of every update so far: in version 1 the runners whose
    /// rank alone changed, in version 2 every rank change (read from the order's moves).
    var ranks: [[String: Any]] { received.filter { $0["type"] as? String == "update" }.flatMap { ($0["ranks"] as? [[String: Any]]) ?? [] } }

    /// Version 2's messages, read with the snapshot's roster and epoch.
    struct CompactDecoder {
        var started = false
        var roster: [(id: String, name: String)] = []
        var epoch = 0.0
        var rank: [Int: Int] = [:]
        /// Every index, leader first, as of the last message that brought the whole field.
        var order: [Int] = []

        mutating func read(_ message: [String: Any]) -> [String: Any] {
            var read = message
            if message["type"] as? String == "snapshot" {
                started = true
                roster = ((message["runners"] as? [[Any]]) ?? []).map { ($0.first as? String ?? "", $0.last as? String ?? "") }
                epoch = (message["epoch"] as? Double ?? 0) / 1000
                order = (message["order"] as? [Int]) ?? []
                rank = Dictionary(order.enumerated().map { ($1, $0 + 1) }) { first, _ in first }
                let states = Dictionary(((message["states"] as? [[Double]]) ?? []).map { (Int($0[0]), $0) }) { first, _ in first }
                read["runners"] = ((message["order"] as? [Int]) ?? []).map { state($0, states[$0]) }
                return read
            }
            // The rank entries: every rank the message changed, whether it says so in `ranks`
            // (pairs) or by the order's `moves` or a whole `order` (as the page reads them).
            var changed: [(index: Int, rank: Int)] = []
            if let whole = message["order"] as? [Int] {
                order = whole
            } else if let moves = message["moves"] as? [Int] {
                let pairs = stride(from: 0, to: moves.count - 1, by: 2).map { (index: moves[$0], rank: moves[$0 + 1]) }
                let moved = Set(pairs.map(\.index))
                var rest = order.filter { !moved.contains($0) }[...]
                var next: [Int] = []
                for pair in pairs {
                    while next.count < pair.rank - 1, let first = rest.popFirst() { next.append(first) }
                    next.append(pair.index)
                }
                order = next + rest
            }
            if message["order"] != nil || message["moves"] != nil {
                for (place, index) in order.enumerated() where rank[index] != place + 1 { changed.append((index, place + 1)) }
            }
            let pairs = (message["ranks"] as? [Int]) ?? []
            for pair in stride(from: 0, to: pairs.count - 1, by: 2) { changed.append((pairs[pair], pairs[pair + 1])) }
            var entries: [[String: Any]] = []
            for (index, place) in changed {
                rank[index] = place
                entries.append(["runnerId": roster.indices.contains(index) ? roster[index].id : "", "rank": place])
            }
            read["ranks"] = entries
            read["runners"] = ((message["runners"] as? [[Double]]) ?? []).map { state(Int($0[0]), $0) }
            if let leaders = message["leaders"] as? [Int] { read["leaders"] = leaders.map { roster.indices.contains($0) ? roster[$0].id : "" } }
            return read
        }

        /// `[index, lat e5, lon e5, metres, tenths since epoch, pace, flags]` as version 1's object.
        func state(_ index: Int, _ numbers: [Double]?) -> [String: Any] {
            var state: [String: Any] = [
                "runnerId": roster.indices.contains(index) ? roster[index].id : "",
                "displayName": roster.indices.contains(index) ? roster[index].name : "",
                "rank": rank[index] as Any, "latitude": NSNull(), "longitude": NSNull(), "distanceMeters": 0.0,
            ]
            guard let numbers, numbers.count == 7 else { return state }
            state["latitude"] = numbers[1] / 1e5
            state["longitude"] = numbers[2] / 1e5
            state["distanceMeters"] = numbers[3]
            state["time"] = WireFormatTime.string(Date(timeIntervalSince1970: epoch + numbers[4] / 10))
            state["paceSecondsPerKm"] = numbers[5] == 0 ? NSNull() : numbers[5]
            state["offCourse"] = Int(numbers[6]) & 1 != 0
            state["finished"] = Int(numbers[6]) & 2 != 0
            return state
        }
    }

    /// Waits until what was received satisfies `condition`. Fails at once, with the reason, if
    /// the connection ended first; the deadline only bounds a server that never answers (it
    /// returns as soon as the condition holds, so a generous one costs nothing on a fast machine).
    func wait(timeout: Duration = .seconds(60), until condition: ([[String: Any]]) -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition(received) {
            if let ended = ended.withLock({ $0 }), !condition(received) { throw SpectatorEnded(reason: ended) }
            guard ContinuousClock.now < deadline else { throw WebhookReceiver.TimedOut() }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    struct SpectatorEnded: Error, CustomStringConvertible {
        let reason: String
        var description: String { "the spectator's WebSocket ended before the awaited message: \(reason)" }
    }

    /// Sends a text message to the server.
    func send(_ text: String) async throws {
        outgoing.yield(text)
    }

    func stop() {
        outgoing.finish()
        task.withLock { $0?.cancel() }
    }
}
