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

    /// Connects to the server on `port` and reads until `stop()`.
    init(port: Int, runId: String) {
        let url = "ws://127.0.0.1:\(port)/api/runs/\(runId)/live"
        let started = Task { [self] in
            do {
                _ = try await WebSocketClient.connect(url: url, logger: TestPostgres.logger) { inbound, _, _ in
                    for try await message in inbound.messages(maxSize: 1 << 22) {
                        if case .text(let text) = message { self.messages.withLock { $0.append(text) } }
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

    /// Every text message so far, parsed.
    var received: [[String: Any]] {
        messages.withLock { $0 }.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    /// Runner states of every update so far, in arrival order.
    var updates: [[String: Any]] { received.filter { $0["type"] as? String == "update" }.flatMap { ($0["runners"] as? [[String: Any]]) ?? [] } }

    /// Rank entries (`{ runnerId, rank }`: runners whose rank alone changed) of every update so far.
    var ranks: [[String: Any]] { received.filter { $0["type"] as? String == "update" }.flatMap { ($0["ranks"] as? [[String: Any]]) ?? [] } }

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

    func stop() {
        task.withLock { $0?.cancel() }
    }
}
