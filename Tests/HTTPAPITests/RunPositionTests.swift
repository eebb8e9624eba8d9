import Foundation
import HTTPAPI
import HTTPTypes
import Testing

@Suite("Track4Run positions: plausibility, projection, ranking, finish, replay")
struct RunPositionTests {
    /// Arco della Pace, Milan.
    static let start = (latitude: 45.4755, longitude: 9.1725)

    /// The point `east` metres east and `north` metres north of the start.
    static func point(_ east: Double, _ north: Double = 0) -> (latitude: Double, longitude: Double) {
        let radians = Double.pi / 180, radius = 6_371_008.8
        return (start.latitude + north / radius / radians, start.longitude + east / (radius * cos(start.latitude * radians)) / radians)
    }

    static func fix(_ east: Double, _ north: Double = 0, at time: Date, accuracy: Double = 5) -> JSONObject {
        let p = point(east, north)
        return [
            "latitude": p.latitude, "longitude": p.longitude, "accuracy": accuracy,
            "time": RunEventTests.time(time.timeIntervalSinceNow, fraction: true),
        ]
    }

    struct StartNotMoved: Error, CustomStringConvertible {
        var description: String { "the event's start could not be moved forward in 20 tries" }
    }

    /// An out-and-back of 150 m each way with `runners` enrolled, starting about two seconds after
    /// the last enrolment; answers its id and start.
    ///
    /// The event is created a day out and its start (and enrolment deadline) moved forward only once
    /// everyone is in, so no fixed lead can be used up by a loaded machine: a start that has already
    /// passed when the server reads the change is refused (422 `startsAt`), and the move is retried.
    static func liveEvent(
        _ api: some APISending, _ organiser: String, enrolling runners: [(token: String, name: String)], maxParticipants: Int = 100,
        whileUpcoming: (String) async throws -> Void = { _ in }
    ) async throws -> (id: String, startsAt: Date) {
        let turn = point(150)
        let created = try await api.send(
            .post, "/api/users/runs", token: organiser,
            json: RunEventTests.event([
                "startsAt": RunEventTests.time(86_400), "endsAt": RunEventTests.time(90_000), "enrolmentDeadline": RunEventTests.time(86_400),
                "maxParticipants": maxParticipants,
                "path": [
                    "type": "LineString",
                    "coordinates": [[start.longitude, start.latitude], [turn.longitude, turn.latitude], [start.longitude, start.latitude]],
                ] as JSONObject,
            ]))
        #expect(created.status == .created, "\(String(decoding: created.data, as: UTF8.self))")
        let id = try #require(created.json["id"] as? String)
        for runner in runners {
            let enrolment = try await api.send(.post, "/api/users/runs/\(id)/enrolment", token: runner.token, json: ["displayName": runner.name])
            #expect(enrolment.status == .created, "\(String(decoding: enrolment.data, as: UTF8.self))")
        }
        try await whileUpcoming(id)
        for _ in 0..<20 {
            // The next whole second at least two seconds away (fixes are sent at whole seconds after it).
            let startsAt = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 2).rounded(.up))
            let moved = try await api.send(
                .patch, "/api/users/runs/\(id)", token: organiser,
                json: [
                    "startsAt": startsAt.formatted(.iso8601), "enrolmentDeadline": startsAt.formatted(.iso8601),
                ])
            if moved.status == .ok {
                return (id, try #require((moved.json["startsAt"] as? String).flatMap { try? Date($0, strategy: .iso8601) }))
            }
            #expect(moved.status == .unprocessableContent, "\(String(decoding: moved.data, as: UTF8.self))")
        }
        throw StartNotMoved()
    }

    @Test(.timeLimit(.minutes(20))) func fixesAreFilteredProjectedRankedAndKeptForReplay() async throws {
        try await TestServer.run { api in
            let (organiser, _) = try await api.individualSession()
            let (leader, _) = try await api.individualSession(), (chaser, _) = try await api.individualSession()
            let (id, startsAt) = try await Self.liveEvent(api, organiser, enrolling: [(leader, "Leader"), (chaser, "Chaser")]) { id in
                // Not under way yet (it starts in a day until the helper moves it): a fix is refused.
                let early = try await api.send(
                    .post, "/api/users/runs/\(id)/positions", token: leader, json: ["positions": [Self.fix(0, at: Date())]])
                #expect(early.status == .unprocessableContent && early.problemFields == ["positions"])
            }
            try await Task.sleep(until: .now + .seconds(max(0, startsAt.timeIntervalSinceNow) + 0.2))

            // Out at 10 m/s with one GPS jump, one inaccurate fix, a resend and a fix from before the start.
            var fixes: [any Sendable] = (0...7).map { Self.fix(Double($0) * 20, 2, at: startsAt.addingTimeInterval(Double($0) * 2 + 1)) }
            fixes.append(Self.fix(900, at: startsAt.addingTimeInterval(16)))  // 760 m in a second: implausible
            fixes.append(Self.fix(140, 3, at: startsAt.addingTimeInterval(15.5), accuracy: 150))  // too inaccurate
            fixes.append(Self.fix(0, at: startsAt.addingTimeInterval(-30)))  // before the start
            fixes.append(Self.fix(140, 2, at: startsAt.addingTimeInterval(15)))  // a resend of the last one
            let out = try await api.send(.post, "/api/users/runs/\(id)/positions", token: leader, json: ["positions": fixes])
            #expect(out.status == .ok, "\(String(decoding: out.data, as: UTF8.self))")
            #expect(out.json["accepted"] as? Int == 8)
            let dropped = try #require(out.json["dropped"] as? [String: Any])
            #expect(
                dropped["implausible"] as? Int == 1 && dropped["inaccurate"] as? Int == 1 && dropped["outsideRun"] as? Int == 1
                    && dropped["duplicate"] as? Int == 1)
            let state = try #require(out.json["state"] as? [String: Any])
            #expect(
                abs((state["distanceMeters"] as? Double ?? 0) - 140) < 3 && state["offCourse"] as? Bool == false
                    && state["finished"] as? Bool == false)

            // Jitter back does not move the runner back; on the way back the course is the second leg.
            let back = try await api.send(
                .post, "/api/users/runs/\(id)/positions", token: leader,
                json: [
                    "positions": [
                        Self.fix(135, -2, at: startsAt.addingTimeInterval(17)), Self.fix(140, 0, at: startsAt.addingTimeInterval(19)),
                        Self.fix(120, 1, at: startsAt.addingTimeInterval(21)),
                        // 60 m off the course
                        Self.fix(110, 60, at: startsAt.addingTimeInterval(28)),
                    ]
                ])
            let backState = try #require(back.json["state"] as? [String: Any])
            #expect(backState["offCourse"] as? Bool == true)
            let backDistance = try #require(backState["distanceMeters"] as? Double)
            #expect(backDistance >= 175 && backDistance <= 210, "\(backDistance)")

            // The chaser is behind; then the leader finishes.
            _ = try await api.send(
                .post, "/api/users/runs/\(id)/positions", token: chaser,
                json: ["positions": [Self.fix(0, at: startsAt.addingTimeInterval(1)), Self.fix(15, at: startsAt.addingTimeInterval(3))]])
            let finish = try await api.send(
                .post, "/api/users/runs/\(id)/positions", token: leader,
                json: [
                    "positions": [
                        Self.fix(70, 0, at: startsAt.addingTimeInterval(36)), Self.fix(20, 0, at: startsAt.addingTimeInterval(41)),
                        Self.fix(2, 0, at: startsAt.addingTimeInterval(43)),
                    ]
                ])
            let done = try #require(finish.json["state"] as? [String: Any])
            #expect(done["finished"] as? Bool == true && done["progress"] as? Double == 1 && done["offCourse"] as? Bool == false)
            let board = try await api.send(.get, "/api/runs/\(id)/leaderboard").items
            #expect(board.map { $0["displayName"] as? String } == ["Leader", "Chaser"] && board.map { $0["rank"] as? Int } == [1, 2])

            // Only runners post; the replay has every kept position in time order, page by page.
            let (stranger, _) = try await api.individualSession()
            #expect(
                try await api.send(.post, "/api/users/runs/\(id)/positions", token: stranger, json: ["positions": [Self.fix(0, at: Date())]]).status
                    == .forbidden)
            #expect(
                try await api.send(.post, "/api/users/runs/\(id)/positions", token: leader, json: ["positions": [["latitude": 91] as JSONObject]])
                    .problemFields.sorted()
                    == ["positions[0].latitude", "positions[0].longitude", "positions[0].time"])
            var times: [String] = [], cursor: String? = nil
            repeat {
                let page = try await api.send(.get, "/api/runs/\(id)/positions?limit=5" + (cursor.map { "&cursor=\($0)" } ?? ""))
                times += page.items.compactMap { $0["time"] as? String }
                cursor = page.json["nextCursor"] as? String
            } while cursor != nil
            #expect(times.count == 8 + 4 + 2 + 3 && times == times.sorted())

            // The leader's export has the event, their enrolment and each of their kept positions;
            // the organiser's has the event only.
            func export(_ token: String) async throws -> [[String: Any]] {
                let reply = try await api.send(.get, "/api/users/export", token: token)
                return String(decoding: reply.data, as: UTF8.self).split(separator: "\n").compactMap {
                    (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
                }
            }
            let mine = try await export(leader)
            #expect(mine.filter { $0["kind"] as? String == "run" }.map { $0["id"] as? String } == [id])
            let enrolment = try #require(mine.first { $0["kind"] as? String == "enrolment" })
            #expect(enrolment["runId"] as? String == id && enrolment["displayName"] as? String == "Leader" && enrolment["finishedAt"] is String)
            let positions = mine.filter { $0["kind"] as? String == "runPosition" }
            #expect(
                positions.count == 8 + 4 + 3
                    && positions.allSatisfy { $0["runId"] as? String == id && $0["runnerId"] as? String == enrolment["runnerId"] as? String })
            #expect(mine.last?["kind"] as? String == "end" && mine.last?["runPositions"] as? Int == 15)
            let organisers = try await export(organiser)
            #expect(organisers.filter { $0["kind"] as? String == "run" }.count == 1 && !organisers.contains { $0["kind"] as? String == "enrolment" })

            // Finishing made the run the leader's workout, once: a run over the course from their
            // first fix to the finish, its route the run's positions. The chaser has none yet.
            _ = try await api.send(
                .post, "/api/users/runs/\(id)/positions", token: leader, json: ["positions": [Self.fix(0, at: startsAt.addingTimeInterval(50))]])
            let workouts = try await api.send(.get, "/api/users/workouts", token: leader).items
            #expect(workouts.count == 1)
            let workout = try #require(workouts.first)
            #expect(workout["activity"] as? String == "running" && workout["source"] as? String == "Track4Run")
            #expect(workout["runId"] as? String == id && workout["importId"] is NSNull)
            let courseLength = try #require(done["distanceMeters"] as? Double)
            #expect(abs((workout["distanceMetres"] as? Double ?? 0) - courseLength) < 0.01)
            #expect(workout["durationSeconds"] as? Double == 40, "first fix 1 s after the start; 20 m from the line at 41 s is the finish")
            let detail = try await api.send(.get, "/api/users/workouts/\(try #require(workout["id"] as? String))", token: leader)
            let route = try #require((detail.json["route"] as? [String: Any])?["coordinates"] as? [[Double]])
            #expect(route.count == 16, "every kept position of the leader (8 + 4 + 3, and one after the finish), in time order")
            #expect(try await api.send(.get, "/api/users/workouts", token: chaser).items.isEmpty)
        }
    }
}
