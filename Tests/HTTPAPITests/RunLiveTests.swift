import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import HummingbirdTesting
import Testing

@Suite("Track4Run live view: WebSocket snapshot and updates, across instances")
struct RunLiveTests {
    @Test(.timeLimit(.minutes(10))) func aSpectatorGetsASnapshotThenEveryRunnersUpdates() async throws {
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

            let spectator = LiveSpectator(port: try #require(api.client.port), runId: id)
            defer { spectator.stop() }
            try await spectator.wait { $0.first?["type"] as? String == "snapshot" }
            let snapshot = spectator.received[0]
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
            #expect(try await api.send(.get, "/api/runs/\(id)/leaderboard").items.first?["displayName"] as? String == "Bruno")
        }
    }

    @Test(.timeLimit(.minutes(10))) func runnersPostingToOneInstanceAreSeenBySpectatorsOfAnother() async throws {
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
