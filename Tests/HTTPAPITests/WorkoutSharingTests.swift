import Foundation
import HTTPAPI
import HTTPTypes
import Testing

@Suite("Workouts as a data type a third party asks for and an individual grants")
struct WorkoutSharingTests {
    @Test func aGrantWithWorkoutsReadsAndReceivesThemAndOnlyThem() async throws {
        try await TestServer.run { api in
            // One organisation subscribed to workouts and heart rate, another granted heart rate only.
            let (person, party, request) = try await SubscriptionFeedTests.subscribe(api, types: ["workout", "heartRate"])
            let account = try await api.send(.get, "/api/users/me", token: person)
            let (other, _) = try await api.thirdPartySession()
            let fiscalCode = try #require(account.string("fiscalCode"))
            let asked = try await api.send(
                .post, "/api/thirdparties/requests", token: other, json: ["fiscalCode": fiscalCode, "types": ["heartRate"], "purpose": "Study"])
            let otherRequest = try #require(asked.string("id"))
            _ = try await api.send(.put, "/api/users/requests/\(otherRequest)", token: person, json: ["decision": "accept"])

            // The export holds a run (2026-11-18) and a ride (2021-06-01).
            let posted = try await ImportTests.post(api, person, ImportTests.export)
            let job = try await ImportTests.finished(api, person, try #require(posted.string("id")))
            #expect(job["state"] as? String == "done")

            let listed = try await api.send(.get, "/api/thirdparties/requests/\(request)/data/workouts", token: party)
            #expect(listed.status == .ok)
            #expect(listed.items.compactMap { $0["activity"] as? String } == ["running", "cycling"])
            #expect(listed.items.allSatisfy { $0["importId"] == nil }, "the import is the owner's business")
            let run = try #require(listed.items.first)
            #expect((run["start"] as? String)?.hasPrefix("2026-11-18T17:00:00") == true && run["durationSeconds"] as? Double == 1890, "\(run)")

            let recent = try await api.send(
                .get, "/api/thirdparties/requests/\(request)/data/workouts?from=2026-01-01T00:00:00Z&limit=1", token: party)
            #expect(recent.items.compactMap { $0["activity"] as? String } == ["running"])
            let paged = try await api.send(.get, "/api/thirdparties/requests/\(request)/data/workouts?limit=1", token: party)
            let cursor = try #require(paged.json["nextCursor"] as? String)
            let second = try await api.send(.get, "/api/thirdparties/requests/\(request)/data/workouts?limit=1&cursor=\(cursor)", token: party)
            #expect(second.items.compactMap { $0["activity"] as? String } == ["cycling"] && second.json["nextCursor"] is NSNull)
            let backwards = try await api.send(
                .get, "/api/thirdparties/requests/\(request)/data/workouts?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z", token: party)
            #expect(backwards.problemFields == ["to"])

            // Workouts are not granted to the other organisation, nor another's request to this one.
            let refused = try await api.send(.get, "/api/thirdparties/requests/\(otherRequest)/data/workouts", token: other)
            #expect(refused.status == .forbidden && refused.string("detail")?.contains("workout") == true)
            #expect(try await api.send(.get, "/api/thirdparties/requests/\(otherRequest)/data/workouts", token: party).status == .notFound)

            // The subscription heard of the import once per granted kind it added to (not item by
            // item): the span and the count, to read by cursor. Steps are not granted.
            let feed = try await api.send(.get, "/api/thirdparties/data", token: party)
            #expect(feed.items.allSatisfy { $0["kind"] as? String == "imported" && $0["requestId"] as? String == request }, "\(feed.items)")
            let imported = Dictionary(feed.items.compactMap { item in (item["type"] as? String).map { ($0, item) } }) { first, _ in first }
            #expect(imported.keys.sorted() == ["heartRate", "workout"])
            let workoutNotice = try #require(imported["workout"])
            #expect(workoutNotice["count"] as? Int == 2)
            #expect((workoutNotice["from"] as? String)?.hasPrefix("2021-06-01T05:00:00") == true)
            #expect((workoutNotice["to"] as? String)?.hasPrefix("2026-11-18T17:00:00.001") == true)
            let heartNotice = try #require(imported["heartRate"])
            let heartFrom = try #require(heartNotice["from"] as? String), heartTo = try #require(heartNotice["to"] as? String)
            let heart = try await api.send(
                .get, "/api/thirdparties/requests/\(request)/data?type=heartRate&from=\(heartFrom)&to=\(heartTo)", token: party)
            #expect(heart.items.count == heartNotice["count"] as? Int && heart.items.count == 1)

            // A grant of part of the history hears of that part only, without a count it could not give exactly.
            let (recentParty, _) = try await api.thirdPartySession()
            let recentAsk = try await api.send(
                .post, "/api/thirdparties/requests", token: recentParty,
                json: [
                    "fiscalCode": fiscalCode, "types": ["workout"], "purpose": "Recent runs", "subscribe": true,
                    "dataFrom": "2026-01-01T00:00:00Z",
                ])
            let recentRequest = try #require(recentAsk.string("id"))
            _ = try await api.send(.put, "/api/users/requests/\(recentRequest)", token: person, json: ["decision": "accept"])
            // The same export from other devices: every record new, a workout before the window and one in it.
            let moreWorkouts = ImportTests.export.replacingOccurrences(of: "Strava", with: "Komoot")
                .replacingOccurrences(of: "Anna’s Apple Watch", with: "Anna’s new Watch")
            let again = try await ImportTests.post(api, person, moreWorkouts)
            _ = try await ImportTests.finished(api, person, try #require(again.string("id")))
            let recentFeed = try await api.send(.get, "/api/thirdparties/data", token: recentParty).items
            #expect(recentFeed.count == 1, "\(recentFeed)")
            let recentNotice = try #require(recentFeed.first)
            #expect(recentNotice["type"] as? String == "workout" && recentNotice["count"] is NSNull)
            #expect((recentNotice["from"] as? String)?.hasPrefix("2026-01-01T00:00:00") == true, "the window's start")

            // Every read of workouts is in the individual's access log.
            let log = try await api.send(.get, "/api/users/access-log", token: person)
            let workoutReads = log.items.filter { ($0["types"] as? [String]) == ["workout"] }
            #expect(
                workoutReads.compactMap { $0["itemCount"] as? Int }.sorted() == [1, 1, 1, 2], "the pulls; a notice of an import discloses nothing")
        }
    }
}
