import AsyncHTTPClient
import DatabaseLink
import DatabaseTestSupport
import Foundation
import HTTPAPI
import HTTPTypes
import PostgresNIO
import Testing

/// `PATCH /api/users/requests/{id}`: the individual changes an active grant. Narrowing cuts what
/// the organisation reads and what its queued events deliver at once; an extension needs an
/// explicit confirmation and never goes beyond what was asked; the organisation is told.
@Suite("Changing an active grant")
struct GrantChangeTests {
    /// The `grant.changed` events the request's organisation has in its log.
    static func changedEvents(_ database: DatabaseURL, request: String) async throws -> Int {
        let direct = Database(configuration: database.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
        let count = try await direct.whileRunning {
            try await direct.query(
                """
                SELECT count(*)::int4 FROM party_events e JOIN access_requests r ON r.id = e.request_id
                WHERE r.public_id = \(UUID(uuidString: request)!) AND e.event_type = 'grant.changed'
                """
            )[0].decode(Int32.self)
        }
        return Int(count)
    }

    @Test func narrowingCutsReadsAndQueuedEventsAndAnExtensionIsConfirmed() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        try await TestServer.run(database: database) { api in
            let (person, party, request) = try await SubscriptionFeedTests.subscribe(api, types: ["heartRate", "stepCount", "location"])
            // Uploaded before the change: its event waits in the organisation's feed, unread.
            _ = try await api.send(.post, "/api/users/data", token: person, json: ["items": SubscriptionFeedTests.upload])

            let narrowed = try await api.send(.patch, "/api/users/requests/\(request)", token: person, json: ["types": ["heartRate"]])
            #expect(narrowed.status == .ok, "\(narrowed.json)")
            #expect((narrowed.json["grant"] as? [String: Any])?["types"] as? [String] == ["heartRate"])
            // The queued event now delivers the heart rates only; location is no longer readable.
            let feed = try await api.send(.get, "/api/thirdparties/data", token: party)
            #expect(feed.items.map { "\($0["kind"]!):\($0["value"] ?? "-")" }.sorted() == ["sample:70", "sample:71"])
            #expect(try await api.send(.get, "/api/thirdparties/requests/\(request)/data/locations", token: party).status != .ok)

            // A narrower window, at once too.
            let windowed = try await api.send(
                .patch, "/api/users/requests/\(request)", token: person, json: ["dataFrom": "2026-11-20T10:00:01Z"])
            #expect(windowed.status == .ok)
            let again = try await api.send(.get, "/api/thirdparties/data", token: party)
            #expect(again.items.compactMap { $0["value"] as? Double } == [71])
            let pulled = try await api.send(.get, "/api/thirdparties/requests/\(request)/data", token: party)
            #expect(pulled.items.compactMap { $0["value"] as? Double } == [71])

            // Never wider than granted, nor than asked; the end moves later only when confirmed.
            let wider = try await api.send(.patch, "/api/users/requests/\(request)", token: person, json: ["types": ["heartRate", "location"]])
            #expect(wider.status == .unprocessableContent && wider.problemFields == ["types"])
            let earlier = try await api.send(.patch, "/api/users/requests/\(request)", token: person, json: ["dataFrom": "2026-11-20T09:00:00Z"])
            #expect(earlier.problemFields == ["dataFrom"])
            let soon = ISO8601DateFormatter().string(from: Date().addingTimeInterval(86_400))
            let later = ISO8601DateFormatter().string(from: Date().addingTimeInterval(2 * 86_400))
            #expect(try await api.send(.patch, "/api/users/requests/\(request)", token: person, json: ["accessUntil": soon]).status == .ok)
            let unconfirmed = try await api.send(.patch, "/api/users/requests/\(request)", token: person, json: ["accessUntil": later])
            #expect(unconfirmed.status == .unprocessableContent && unconfirmed.problemFields == ["accessUntil"])
            let confirmed = try await api.send(
                .patch, "/api/users/requests/\(request)", token: person, json: ["accessUntil": later, "confirmExtension": true])
            #expect(confirmed.status == .ok)
            #expect((confirmed.json["grant"] as? [String: Any])?["accessUntil"] as? String != nil)
            #expect(try await api.send(.patch, "/api/users/requests/\(request)", token: person, json: [:]).problemFields == ["types"])

            // The subscription off: new data is read by pull only; it cannot be turned on here.
            let off = try await api.send(.patch, "/api/users/requests/\(request)", token: person, json: ["subscribe": false])
            #expect(off.status == .ok && off.json["subscribe"] as? Bool == false)
            let cursor = again.json["nextCursor"] as? String ?? ""
            let late: [any Sendable] = [["type": "heartRate", "value": 95, "start": "2026-11-20T12:00:00Z"] as JSONObject]
            _ = try await api.send(.post, "/api/users/data", token: person, json: ["items": late])
            #expect(try await api.send(.get, "/api/thirdparties/data?cursor=\(cursor)", token: party).items.isEmpty)
            #expect(
                try await api.send(.patch, "/api/users/requests/\(request)", token: person, json: ["subscribe": true]).problemFields == ["subscribe"])

            // Each change told the organisation; its stream carries the grant as it stands.
            #expect(try await Self.changedEvents(database, request: request) == 5)
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { try? http.shutdown().wait() }
            var stream = try await EventStreamReader.open(http, port: try #require(api.client.port), token: party)
            var changed: EventStreamReader.Event?
            while changed == nil {
                let event = try await stream.next()
                if event.type == "grant.changed" { changed = event }
            }
            let data = try #require(changed?.json["data"] as? [String: Any])
            let grant = try #require(data["grant"] as? [String: Any])
            #expect(grant["types"] as? [String] == ["heartRate"] && grant["dataFrom"] as? String == "2026-11-20T10:00:01.000Z")
            #expect(grant["accessUntil"] is String && data["subscribe"] as? Bool == false)
            #expect(changed?.json["requestId"] as? String == request)

            // Nobody else may change the grant; a revoked one cannot change.
            let (stranger, _) = try await api.individualSession()
            #expect(try await api.send(.patch, "/api/users/requests/\(request)", token: stranger, json: ["types": ["heartRate"]]).status == .notFound)
            #expect(try await api.send(.patch, "/api/users/requests/\(request)", token: party, json: ["types": ["heartRate"]]).status == .forbidden)
            _ = try await api.send(.post, "/api/users/requests/\(request)/revoke", token: person)
            #expect(try await api.send(.patch, "/api/users/requests/\(request)", token: person, json: ["types": ["heartRate"]]).status == .conflict)
        }
    }
}
