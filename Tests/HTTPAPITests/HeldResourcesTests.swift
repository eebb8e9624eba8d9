import AsyncHTTPClient
import Foundation
import HTTPAPI
import HTTPTypes
import HummingbirdTesting
import Testing

/// What the server holds for its clients (live spectators, WebSocket connections, event
/// streams, tasks asleep on the outbox signal) is counted on `/metrics`, and goes back to its
/// baseline when they leave — round after round, so a path that kept something per client would
/// show as a count that climbs.
@Suite("What the server holds returns to its baseline when its clients leave")
struct HeldResourcesTests {
    static let clients = ["live_spectators", "live_events_watched", "websocket_connections_open", "sse_streams_open"]
    static let held = clients + ["change_signal_waiters", "live_messages_due", "rate_limit_buckets", "webhook_attempts_in_flight"]

    /// The unlabelled gauges of `/metrics`, by name.
    static func gauges(_ api: some APISending) async throws -> [String: Double] {
        let text = String(decoding: try await api.send(.get, "/metrics").data, as: UTF8.self)
        var values: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            if parts.count == 2, !parts[0].contains("{"), let value = Double(parts[1]) { values[String(parts[0])] = value }
        }
        return values
    }

    /// Polls `/metrics` until `condition` holds (or 20 s pass, when it records what it saw).
    static func waitFor(_ api: some APISending, _ what: String, _ condition: ([String: Double]) -> Bool) async throws -> [String: Double] {
        let deadline = ContinuousClock.now + .seconds(20)
        var seen = try await gauges(api)
        while !condition(seen), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            seen = try await gauges(api)
        }
        #expect(condition(seen), "\(what): \(held.map { "\($0)=\(seen[$0] ?? -1)" })")
        return seen
    }

    @Test(.timeLimit(.minutes(20))) func spectatorsAndStreamsComeAndGoRoundAfterRound() async throws {
        try await TestServer.run { api in
            let port = try #require(api.client.port)
            let (organiser, _) = try await api.individualSession()
            let created = try await api.send(.post, "/api/users/runs", token: organiser, json: RunEventTests.event())
            let run = try #require(created.string("id"))
            let (party, _) = try await api.thirdPartySession()
            let baseline = try await Self.gauges(api)
            #expect(baseline["process_resident_memory_bytes"] ?? 0 > 0)
            #expect(Self.held.allSatisfy { baseline[$0] != nil }, "every held count is published: \(baseline.keys.sorted())")

            for round in 1...3 {
                let spectators = (0..<10).map { _ in LiveSpectator(port: port, runId: run) }
                for spectator in spectators { try await spectator.wait { $0.first?["type"] as? String == "snapshot" } }
                let http = HTTPClient(eventLoopGroupProvider: .singleton)
                var streams: [EventStreamReader] = []
                for _ in 0..<3 { streams.append(try await EventStreamReader.open(http, port: port, token: party)) }
                _ = try await Self.waitFor(api, "round \(round), everyone connected") {
                    $0["live_spectators"] == 10 && $0["websocket_connections_open"] == 10 && $0["live_events_watched"] == 1
                        && $0["sse_streams_open"] == 3
                }
                for spectator in spectators { spectator.stop() }
                streams.removeAll()
                try await http.shutdown()
                // The clients' own counts are back exactly; the signal's sleepers are the webhook
                // workers alone again (8, fewer while one is busy), no stream among them.
                _ = try await Self.waitFor(api, "round \(round), everyone gone") { seen in
                    Self.clients.allSatisfy { seen[$0] == baseline[$0] } && (seen["change_signal_waiters"] ?? .infinity) <= 8
                }
            }
        }
    }
}
