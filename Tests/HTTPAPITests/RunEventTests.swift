import DatabaseLink
import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PostgresNIO
import Testing

@Suite("Track4Run events: organisers, enrolment, the public listing")
struct RunEventTests {
    static func time(_ offset: TimeInterval, fraction: Bool = false) -> String {
        Date().addingTimeInterval(offset).formatted(
            .iso8601.year().month().day().time(includingFractionalSeconds: fraction).timeZone(separator: .omitted))
    }

    /// A 2-km out-and-back along Corso Sempione, starting in a day.
    static func event(_ overrides: JSONObject = [:]) -> JSONObject {
        var event: JSONObject = [
            "name": "Sempione 2K", "description": "Out and back.", "startsAt": time(86_400), "endsAt": time(86_400 + 7_200),
            "enrolmentDeadline": time(3_600), "maxParticipants": 100,
            "path": ["type": "LineString", "coordinates": [[9.1725, 45.4755], [9.1600, 45.4820], [9.1725, 45.4755]]] as JSONObject,
        ]
        event.merge(overrides) { $1 }
        return event
    }

    @Test func eventsAreValidatedByFieldAndListedWithTheirLength() async throws {
        try await TestServer.run { api in
            let (organiser, _) = try await api.individualSession()
            let created = try await api.send(.post, "/api/users/runs", token: organiser, json: Self.event())
            #expect(created.status == .created)
            let length = try #require(created.json["lengthMeters"] as? Double)
            #expect(abs(length - 2_426.7) < 2, "\(length)")  // two legs of 722.8 m north × 974.5 m west: 1,213.3 m each
            #expect(created.json["status"] as? String == "upcoming" && created.json["participantCount"] as? Int == 0)

            let cases: [(JSONObject, [String])] = [
                (["path": ["type": "LineString", "coordinates": [[9.17, 45.47]]] as JSONObject], ["path.coordinates"]),
                (["path": ["type": "LineString", "coordinates": [[9.17, 45.47], [9.17, 95]]] as JSONObject], ["path.coordinates[1]"]),
                (["path": ["type": "Point", "coordinates": [[9.17, 45.47], [9.18, 45.48]]] as JSONObject], ["path.type"]),
                (["startsAt": Self.time(-60)], ["startsAt"]),
                (["endsAt": Self.time(3_600)], ["endsAt"]),
                (["enrolmentDeadline": Self.time(90_000)], ["enrolmentDeadline"]),
                (["maxParticipants": 0], ["maxParticipants"]),
                (["startsAt": "tomorrow"], ["startsAt"]),
                (["name": "  "], ["name"]),
            ]
            for (overrides, fields) in cases {
                let reply = try await api.send(.post, "/api/users/runs", token: organiser, json: Self.event(overrides))
                #expect(reply.status == .unprocessableContent, "\(overrides)")
                #expect(reply.problemFields == fields, "\(overrides)")
            }
            var missing = Self.event()
            missing.removeValue(forKey: "path")
            #expect(try await api.send(.post, "/api/users/runs", token: organiser, json: missing).problemFields == ["path"])
            // Nothing of the refused ones was written.
            #expect(try await api.send(.get, "/api/users/runs?role=organiser", token: organiser).items.count == 1)

            let id = try #require(created.json["id"] as? String)
            let listed = try await api.send(.get, "/api/runs?status=upcoming")
            #expect(listed.status == .ok && listed.items.contains { $0["id"] as? String == id })
            #expect(try await api.send(.get, "/api/runs?status=live").items.allSatisfy { $0["id"] as? String != id })
            #expect(try await api.send(.get, "/api/runs?status=soon").problemFields == ["status"])
            let page = try await api.send(.get, "/api/runs/\(id)")
            #expect(page.status == .ok && (page.json["runners"] as? [Any])?.isEmpty == true)
            #expect(try await api.send(.get, "/api/runs/\(UUID().uuidString.lowercased())").status == .notFound)
        }
    }

    /// The fields of a run event sent with a GPX body: in the query.
    static var gpxQuery: String {
        "name=Parco&startsAt=\(time(86_400))&endsAt=\(time(90_000))&enrolmentDeadline=\(time(3_600))&maxParticipants=5"
            .replacingOccurrences(of: "+", with: "%2B")
    }

    @Test func aGPXCourseIsAcceptedWithTheOtherFieldsInTheQuery() async throws {
        try await TestServer.run { api in
            let (organiser, _) = try await api.individualSession()
            let gpx = """
                <?xml version="1.0"?><gpx version="1.1" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg>
                <trkpt lat="45.4755" lon="9.1725"/><trkpt lat="45.4820" lon="9.1600"/></trkseg></trk></gpx>
                """
            let query = Self.gpxQuery
            let headers: HTTPFields = [.contentType: "application/gpx+xml"]
            let created = try await api.send(.post, "/api/users/runs?\(query)", token: organiser, raw: gpx, headers: headers)
            #expect(created.status == .created, "\(String(decoding: created.data, as: UTF8.self))")
            #expect(((created.json["path"] as? [String: Any])?["coordinates"] as? [[Double]])?.first == [9.1725, 45.4755])
            // The same file gzip-coded by GNU gzip, as a client may send any body.
            var coded = headers
            coded[.authorization] = "Bearer \(organiser)"
            coded[.contentEncoding] = "gzip"
            let gzipped = try await api.client.execute(
                uri: "/api/users/runs?\(query)", method: .post, headers: coded,
                body: ByteBuffer(bytes: try ContentCodingTests.gnuGzip(Array(gpx.utf8))))
            #expect(gzipped.status == .created)
            let broken = try await api.send(.post, "/api/users/runs?\(query)", token: organiser, raw: "<gpx><trk>", headers: headers)
            #expect(broken.status == .unprocessableContent && broken.problemFields == ["body"])
        }
    }

    /// Courses as FIT and TCX files written by fit-tool and GPSBabel: the path is the course's.
    @Test func fitAndTcxCoursesAreAccepted() async throws {
        let fit = try ImportTests.deviceFixture("fit-tool-course.fit")
        let tcx = try ImportTests.deviceFixture("gpsbabel-course.tcx")
        try await TestServer.run { api in
            let (organiser, _) = try await api.individualSession()
            func create(_ body: Data, _ contentType: String) async throws -> APIClient.Reply {
                let headers: HTTPFields = [.authorization: "Bearer \(organiser)", .contentType: contentType]
                let response = try await api.client.execute(
                    uri: "/api/users/runs?\(Self.gpxQuery)", method: .post, headers: headers, body: ByteBuffer(bytes: body))
                return APIClient.Reply(
                    status: response.status, headers: response.headers, data: Data((response.body ?? ByteBuffer()).readableBytesView))
            }
            let fromFIT = try await create(fit, "application/vnd.ant.fit")
            #expect(fromFIT.status == .created, "\(String(decoding: fromFIT.data, as: UTF8.self))")
            let coordinates = ((fromFIT.json["path"] as? [String: Any])?["coordinates"] as? [[Double]]) ?? []
            #expect(coordinates.count == 40 && abs((coordinates.first?[1] ?? 0) - 45.4755) < 1e-6)
            let fromTCX = try await create(tcx, "application/vnd.garmin.tcx+xml")
            #expect(fromTCX.status == .created && ((fromTCX.json["path"] as? [String: Any])?["coordinates"] as? [[Double]])?.count == 3)
            let notFIT = try await create(Data("<gpx/>".utf8), "application/vnd.ant.fit")
            #expect(notFIT.status == .unprocessableContent && notFIT.problemFields == ["body"])
        }
    }

    @Test func enrolmentIsOnceBeforeTheDeadlineAndNeverBeyondCapacity() async throws {
        try await TestServer.run { api in
            let (organiser, _) = try await api.individualSession()
            let id = try #require(
                try await api.send(.post, "/api/users/runs", token: organiser, json: Self.event(["maxParticipants": 2])).json["id"] as? String)
            let (first, _) = try await api.individualSession()
            let enrolled = try await api.send(.post, "/api/users/runs/\(id)/enrolment", token: first, json: ["displayName": "Giulia"])
            #expect(enrolled.status == .created && enrolled.json["displayName"] as? String == "Giulia")
            #expect(try await api.send(.post, "/api/users/runs/\(id)/enrolment", token: first, json: ["displayName": "Giulia"]).status == .conflict)
            #expect(try await api.send(.post, "/api/users/runs/\(id)/enrolment", token: first, json: [:]).problemFields == ["displayName"])

            // Two runners race for the last place: exactly one gets it.
            let (second, _) = try await api.individualSession(), (third, _) = try await api.individualSession()
            async let a = api.send(.post, "/api/users/runs/\(id)/enrolment", token: second, json: ["displayName": "Marco"])
            async let b = api.send(.post, "/api/users/runs/\(id)/enrolment", token: third, json: ["displayName": "Luca"])
            let statuses = [try await a.status, try await b.status]
            #expect(statuses.filter { $0 == .created }.count == 1 && statuses.filter { $0 == .conflict }.count == 1)
            let page = try await api.send(.get, "/api/runs/\(id)")
            #expect(page.json["participantCount"] as? Int == 2 && (page.json["runners"] as? [[String: Any]])?.count == 2)
            #expect(!String(decoding: page.data, as: UTF8.self).contains("@"))  // display names only, no accounts

            // Withdrawing frees the place; the organiser cannot go below the runners enrolled.
            #expect(try await api.send(.delete, "/api/users/runs/\(id)/enrolment", token: first).status == .noContent)
            #expect(try await api.send(.delete, "/api/users/runs/\(id)/enrolment", token: first).status == .notFound)
            #expect(
                try await api.send(.patch, "/api/users/runs/\(id)", token: organiser, json: ["maxParticipants": 0]).problemFields == [
                    "maxParticipants"
                ])
            let (late, _) = try await api.individualSession()
            let closed = try #require(
                try await api.send(.post, "/api/users/runs", token: organiser, json: Self.event(["enrolmentDeadline": Self.time(-60)])).json["id"]
                    as? String)
            #expect(try await api.send(.post, "/api/users/runs/\(closed)/enrolment", token: late, json: ["displayName": "Late"]).status == .conflict)
            #expect(
                try await api.send(.get, "/api/users/runs?role=participant", token: second).items.count
                    + (try await api.send(.get, "/api/users/runs?role=participant", token: third).items.count) == 1)
        }
    }

    @Test func organisersChangeBeforeTheStartAndCancelTellingTheirRunners() async throws {
        let device = try WebhookReceiver()
        let listening = device.start()
        defer { listening.cancel() }
        try await TestServer.run(configure: WebhookTests.localDelivery) { api in
            let (organiser, _) = try await api.individualSession()
            let id = try #require(try await api.send(.post, "/api/users/runs", token: organiser, json: Self.event()).json["id"] as? String)
            let changed = try await api.send(
                .patch, "/api/users/runs/\(id)", token: organiser, json: ["name": "Sempione 2K — new date", "maxParticipants": 50])
            #expect(
                changed.status == .ok && changed.json["name"] as? String == "Sempione 2K — new date" && changed.json["maxParticipants"] as? Int == 50)
            #expect(
                try await api.send(.patch, "/api/users/runs/\(id)", token: organiser, json: ["endsAt": Self.time(3_600)]).problemFields == ["endsAt"])

            let (stranger, _) = try await api.individualSession()
            #expect(try await api.send(.patch, "/api/users/runs/\(id)", token: stranger, json: ["name": "Mine"]).status == .notFound)
            #expect(try await api.send(.post, "/api/users/runs/\(id)/cancel", token: stranger).status == .notFound)
            let (party, _) = try await api.thirdPartySession()
            #expect(try await api.send(.get, "/api/users/runs", token: party).status == .forbidden)

            let (runner, _) = try await api.individualSession()
            _ = try await WebhookTests.register(api, runner, device.url, path: "/api/users/notifications")
            #expect(try await api.send(.post, "/api/users/runs/\(id)/enrolment", token: runner, json: ["displayName": "Anna"]).status == .created)
            let cancelled = try await api.send(.post, "/api/users/runs/\(id)/cancel", token: organiser)
            #expect(cancelled.json["status"] as? String == "cancelled" && cancelled.json["cancelledAt"] is String)
            try await device.wait { $0.contains { $0.type == "run.cancelled" } }
            #expect(try await api.send(.post, "/api/users/runs/\(id)/enrolment", token: stranger, json: ["displayName": "X"]).status == .conflict)
            #expect(try await api.send(.patch, "/api/users/runs/\(id)", token: organiser, json: ["name": "Back on"]).status == .conflict)
            #expect(try await api.send(.get, "/api/runs?status=cancelled").items.contains { $0["id"] as? String == id })
        }
    }

    /// An event that is over can no longer be cancelled (it used to answer "Event under way"),
    /// nor changed, nor joined; it lists as finished.
    @Test func anEventThatHasEndedIsFinishedNotCancellable() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database) { api in
            let (organiser, _) = try await api.individualSession()
            let (runner, _) = try await api.individualSession()
            let id = try #require(try await api.send(.post, "/api/users/runs", token: organiser, json: Self.event()).json["id"] as? String)
            let direct = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
            try await direct.whileRunning {  // yesterday's race
                try await direct.query(
                    """
                    UPDATE run_events SET enrolment_deadline = now() - interval '26 hours', starts_at = now() - interval '25 hours',
                                          ends_at = now() - interval '23 hours'
                    WHERE public_id = \(UUID(uuidString: id)!)
                    """)
            }
            let cancel = try await api.send(.post, "/api/users/runs/\(id)/cancel", token: organiser)
            #expect(cancel.status == .conflict && cancel.string("type")?.hasSuffix("run-ended") == true, "\(cancel.json)")
            #expect(
                try await api.send(.patch, "/api/users/runs/\(id)", token: organiser, json: ["name": "Again"]).string("type")?.hasSuffix(
                    "run-started") == true)
            let enrol = try await api.send(.post, "/api/users/runs/\(id)/enrolment", token: runner, json: ["displayName": "Late"])
            #expect(enrol.status == .conflict && enrol.string("type")?.hasSuffix("enrolment-closed") == true)
            #expect(try await api.send(.get, "/api/runs?status=finished").items.contains { $0["id"] as? String == id })
            #expect(try await api.send(.get, "/api/runs/\(id)").json["status"] as? String == "finished")
        }
    }
}
