import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import HummingbirdTesting
import Testing

@Suite("Track4Run live view: WebSocket snapshot and updates, across instances")
struct RunLiveTests {
    /// Version 2 (the default) and version 1 (`?v=1`, kept for one release) say the same things.
    @Test(.timeLimit(.minutes(20)), arguments: ["", "v=1"]) func aSpectatorGetsASnapshotThenEveryRunnersUpdates(query: String) async throws {
        try await TestServer.run { api in
            let (organiser, _) = try await api.individualSession()
            let (anna, _) = try await api.individualSession(), (bruno, _) = try await api.individualSession()
            let (id, startsAt) = try await RunPositionTests.liveEvent(api, organiser, enrolling: [(anna, "Anna"), (bruno, "Bruno")])
            try await Task.sleep(until: .now + .seconds(max(0, startsAt.timeIntervalSinceNow) + 0.2))
            _ = try await api.send(
                .post, "/api/users/runs/\(id)/positions", token: anna,
                json: [
                    "positions": [
                        RunPositionTests.fix(0, at: startsAt.addingTimeInterval(1)), RunPositionTests.fix(20, at: startsAt.addingTimeInterval(3)),
                    ]
                ])

            let spectator = LiveSpectator(port: try #require(api.client.port), runId: id, query: query)
            defer { spectator.stop() }
            try await spectator.wait { $0.first?["type"] as? String == "snapshot" }
            let snapshot = spectator.received[0]
            #expect(snapshot["v"] as? Int == (query.isEmpty ? 2 : nil))
            #expect((snapshot["run"] as? [String: Any])?["id"] as? String == id)
            let runners = try #require(snapshot["runners"] as? [[String: Any]])
            #expect(runners.map { $0["displayName"] as? String } == ["Anna", "Bruno"] && runners[0]["rank"] as? Int == 1)
            #expect(abs((runners[0]["distanceMeters"] as? Double ?? 0) - 20) < 2 && runners[1]["latitude"] is NSNull)

            // Bruno overtakes: his state and both ranks change.
            _ = try await api.send(
                .post, "/api/users/runs/\(id)/positions", token: bruno,
                json: [
                    "positions": [
                        RunPositionTests.fix(0, at: startsAt.addingTimeInterval(1)), RunPositionTests.fix(30, at: startsAt.addingTimeInterval(4)),
                    ]
                ])
            try await spectator.wait { _ in spectator.updates.contains { $0["displayName"] as? String == "Bruno" && $0["rank"] as? Int == 1 } }
            // Anna did not move: her new rank comes as a rank entry, not her whole state again.
            let annaId = try #require(runners.first { $0["displayName"] as? String == "Anna" }?["runnerId"] as? String)
            try await spectator.wait { _ in spectator.ranks.contains { $0["runnerId"] as? String == annaId && $0["rank"] as? Int == 2 } }
            #expect(!spectator.updates.contains { $0["runnerId"] as? String == annaId })
            let leaderboard = try await api.send(.get, "/api/runs/\(id)/leaderboard").items
            #expect(leaderboard.first?["displayName"] as? String == "Bruno")
            // What the spectator decoded is where the runner is: within a metre, to the tenth of a second.
            let brunoState = try #require(spectator.updates.last { $0["displayName"] as? String == "Bruno" })
            let stored = try #require(leaderboard.first)
            let metres = RunLiveTests.metres(
                (brunoState["latitude"] as? Double ?? 0, brunoState["longitude"] as? Double ?? 0),
                (stored["latitude"] as? Double ?? 90, stored["longitude"] as? Double ?? 0))
            #expect(metres < 1, "\(metres) m")
            let times = [brunoState["time"], stored["time"]].compactMap {
                ($0 as? String).flatMap { try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse($0) }
            }
            #expect(times.count == 2 && abs(times[0].timeIntervalSince(times[1])) <= 0.05, "\(times)")
            if query.isEmpty {
                // Version 2's bytes: every runner update within 48 bytes.
                for text in spectator.texts.dropFirst() {
                    let message = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
                    for state in (message["runners"] as? [[Int]]) ?? [] {
                        let bytes = try JSONSerialization.data(withJSONObject: state).count + 1
                        #expect(bytes <= 48 && state.count == 7, "\(state)")
                    }
                }
            }
        }
    }

    /// Great-circle distance (haversine) between two points, in metres.
    static func metres(_ a: (Double, Double), _ b: (Double, Double)) -> Double {
        let radians = Double.pi / 180, earth = 6_371_008.8
        let dLat = (b.0 - a.0) * radians, dLon = (b.1 - a.1) * radians
        let h = sin(dLat / 2) * sin(dLat / 2) + cos(a.0 * radians) * cos(b.0 * radians) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * earth * asin(min(1, h.squareRoot()))
    }

    /// A spectator who follows one runner and takes the field every 60 s gets that runner's
    /// every move at once, new leaders with its next move, but the other runner only at the
    /// next field period; changing whom they follow with a message answers a new snapshot;
    /// refused options name their field.
    @Test(.timeLimit(.minutes(20))) func followedRunnersAtFullRateTheFieldLess() async throws {
        try await TestServer.run { api in
            let (organiser, _) = try await api.individualSession()
            let (anna, _) = try await api.individualSession(), (bruno, _) = try await api.individualSession()
            let (id, startsAt) = try await RunPositionTests.liveEvent(api, organiser, enrolling: [(anna, "Anna"), (bruno, "Bruno")])
            let port = try #require(api.client.port)
            let whole = LiveSpectator(port: port, runId: id)
            defer { whole.stop() }
            try await whole.wait { $0.first?["type"] as? String == "snapshot" }
            let roster = try #require(
                whole.texts.first.flatMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }?["runners"] as? [[String]])
            let annaId = try #require(roster.first { $0[1] == "Anna" }?[0]), brunoId = try #require(roster.first { $0[1] == "Bruno" }?[0])

            // Refused before any upgrade: a plain GET names the field (a WebSocket client gets no upgrade).
            for (query, field) in [("v=3", "v"), ("follow=nobody", "follow"), ("fieldEveryMs=5", "fieldEveryMs"), ("v=1&follow=\(annaId)", "follow")]
            {
                let refused = try await api.send(.get, "/api/runs/\(id)/live?\(query)")
                #expect(refused.status == .unprocessableContent && refused.problemFields == [field], "\(query)")
            }
            #expect(try await api.send(.get, "/api/runs/\(id)/live?follow=\(annaId)&fieldEveryMs=1000").status == .upgradeRequired)

            let fan = LiveSpectator(port: port, runId: id, query: "follow=\(annaId)&fieldEveryMs=60000")
            defer { fan.stop() }
            try await fan.wait { $0.first?["type"] as? String == "snapshot" }
            try await Task.sleep(until: .now + .seconds(max(0, startsAt.timeIntervalSinceNow) + 0.2))
            // The field goes out on a grid of its period from the epoch (here whole minutes): start
            // early in a minute, so that no grid line falls between Bruno's move and the check that
            // the fan has not had it yet — on a slow machine that can still happen, and then the
            // check says nothing.
            let intoMinute = Date().timeIntervalSince1970.truncatingRemainder(dividingBy: 60)
            if intoMinute > 15 { try await Task.sleep(for: .seconds(60 - intoMinute + 0.5)) }
            let minute = (Date().timeIntervalSince1970 / 60).rounded(.down)
            // Anna leads, then Bruno passes her: the fan sees her move at once; his move and his lead
            // wait (for the field, up to 60 s) — the lead until Anna's next move, which brings it.
            _ = try await api.send(
                .post, "/api/users/runs/\(id)/positions", token: anna,
                json: ["positions": [RunPositionTests.fix(5, at: startsAt.addingTimeInterval(2))]])
            try await fan.wait { _ in fan.updates.contains { $0["runnerId"] as? String == annaId } }
            _ = try await api.send(
                .post, "/api/users/runs/\(id)/positions", token: bruno,
                json: ["positions": [RunPositionTests.fix(10, at: startsAt.addingTimeInterval(2))]])
            try await whole.wait { _ in
                whole.updates.contains { $0["runnerId"] as? String == annaId } && whole.updates.contains { $0["runnerId"] as? String == brunoId }
            }
            try await Task.sleep(for: .milliseconds(200))
            let brunoLeads: @Sendable ([String: Any]) -> Bool = { ($0["leaders"] as? [String])?.first == brunoId }
            if (Date().timeIntervalSince1970 / 60).rounded(.down) == minute {
                #expect(!fan.updates.contains { $0["runnerId"] as? String == brunoId })
                #expect(!fan.received.contains(where: brunoLeads))
            }
            _ = try await api.send(
                .post, "/api/users/runs/\(id)/positions", token: anna,
                json: ["positions": [RunPositionTests.fix(7, at: startsAt.addingTimeInterval(3))]])
            try await fan.wait { $0.contains(where: brunoLeads) }

            // Follow Bruno instead, with the field at every update: a new snapshot, then his moves.
            let snapshots = fan.received.count { $0["type"] as? String == "snapshot" }
            try await fan.send(#"{"follow":["\#(brunoId)"],"fieldEveryMs":0}"#)
            try await fan.wait { $0.count { $0["type"] as? String == "snapshot" } == snapshots + 1 }
            _ = try await api.send(
                .post, "/api/users/runs/\(id)/positions", token: bruno,
                json: ["positions": [RunPositionTests.fix(20, at: startsAt.addingTimeInterval(4))]])
            try await fan.wait { _ in fan.updates.contains { $0["runnerId"] as? String == brunoId && ($0["distanceMeters"] as? Double ?? 0) > 15 } }
            // A refused message is answered with the field's problem; the connection stays.
            try await fan.send(#"{"follow":["not-a-runner"]}"#)
            try await fan.wait { $0.contains { $0["type"] as? String == "error" && $0["field"] as? String == "follow" } }
            _ = try await api.send(
                .post, "/api/users/runs/\(id)/positions", token: anna,
                json: ["positions": [RunPositionTests.fix(30, at: startsAt.addingTimeInterval(6))]])
            try await fan.wait { _ in fan.updates.contains { $0["runnerId"] as? String == annaId && ($0["distanceMeters"] as? Double ?? 0) > 25 } }
        }
    }

    @Test(.timeLimit(.minutes(20))) func runnersPostingToOneInstanceAreSeenBySpectatorsOfAnother() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database) { first in
            try await TestServer.run(database: database) { second in
                let (organiser, _) = try await first.individualSession()
                let (runner, _) = try await first.individualSession()
                let (id, startsAt) = try await RunPositionTests.liveEvent(first, organiser, enrolling: [(runner, "Carla")])
                let spectator = LiveSpectator(port: try #require(second.client.port), runId: id)
                defer { spectator.stop() }
                try await spectator.wait { $0.first?["type"] as? String == "snapshot" }
                try await Task.sleep(until: .now + .seconds(max(0, startsAt.timeIntervalSinceNow) + 0.2))
                for second in 1...3 {
                    let fix = RunPositionTests.fix(Double(second) * 10, at: startsAt.addingTimeInterval(Double(second)))
                    #expect(try await first.send(.post, "/api/users/runs/\(id)/positions", token: runner, json: ["positions": [fix]]).status == .ok)
                }
                try await spectator.wait { _ in spectator.updates.contains { abs(($0["distanceMeters"] as? Double ?? 0) - 30) < 2 } }
                #expect(spectator.updates.allSatisfy { $0["displayName"] as? String == "Carla" })
            }
        }
    }
}
