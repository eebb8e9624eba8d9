import AsyncHTTPClient
import Foundation
import HTTPAPI
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOHTTP1
import Testing

/// Reads Server-Sent Events from a live response, one event at a time.
struct EventStreamReader {
    struct Event {
        let id: String
        let type: String
        let json: [String: Any]
        var items: [[String: Any]] { ((json["data"] as? [String: Any])?["items"] as? [[String: Any]]) ?? [] }
    }

    private var body: HTTPClientResponse.Body.AsyncIterator
    private var pending = ""
    let response: HTTPClientResponse

    static func open(_ http: HTTPClient, port: Int, token: String, lastEventId: String? = nil) async throws -> EventStreamReader {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/api/thirdparties/stream")
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Accept", value: "text/event-stream")
        if let lastEventId { request.headers.add(name: "Last-Event-ID", value: lastEventId) }
        let response = try await http.execute(request, timeout: .seconds(120))
        return EventStreamReader(body: response.body.makeAsyncIterator(), response: response)
    }

    private init(body: HTTPClientResponse.Body.AsyncIterator, response: HTTPClientResponse) {
        self.body = body
        self.response = response
    }

    /// The next event (comments and the retry hint skipped).
    mutating func next() async throws -> Event {
        while true {
            if let end = pending.range(of: "\n\n") {
                let block = String(pending[..<end.lowerBound])
                pending = String(pending[end.upperBound...])
                var id = "", type = "message", data = ""
                for line in block.split(separator: "\n") {
                    if line.hasPrefix("id: ") { id = String(line.dropFirst(4)) }
                    if line.hasPrefix("event: ") { type = String(line.dropFirst(7)) }
                    if line.hasPrefix("data: ") { data += line.dropFirst(6) }
                }
                guard !data.isEmpty else { continue }
                let json = (try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any]) ?? [:]
                return Event(id: id, type: type, json: json)
            }
            guard let chunk = try await body.next() else { throw StreamEnded() }
            pending += String(buffer: chunk)
        }
    }

    struct StreamEnded: Error {}
}

@Suite("GET /api/thirdparties/stream: the party's events as server-sent events")
struct EventStreamTests {
    @Test(.timeLimit(.minutes(20))) func liveResumableAndStoppedByRevocation() async throws {
        try await TestServer.run { api in
            let port = try #require(api.client.port)
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { try? http.shutdown().wait() }
            let (person, party, request) = try await SubscriptionFeedTests.subscribe(api, types: ["heartRate"])
            var stream = try await EventStreamReader.open(http, port: port, token: party)
            #expect(stream.response.status == .ok)
            #expect(stream.response.headers["content-type"].first == "text/event-stream")

            let granted = try await stream.next()
            #expect(granted.type == "request.granted" && granted.json["requestId"] as? String == request)
            _ = try await api.send(.post, "/api/users/data", token: person, json: WebhookTests.upload(77, at: 3))
            let data = try await stream.next()
            #expect(data.type == "data.created")
            #expect(data.items.map { $0["value"] as? Double } == [77])
            #expect(data.json["id"] as? String == data.id)

            // Reconnecting after the first event replays only what came after it.
            var resumed = try await EventStreamReader.open(http, port: port, token: party, lastEventId: granted.id)
            let replayed = try await resumed.next()
            #expect(replayed.id == data.id && replayed.items.count == 1)

            // Revocation: the party hears of it, and new data no longer flows.
            _ = try await api.send(.post, "/api/users/requests/\(request)/revoke", token: person)
            _ = try await api.send(.post, "/api/users/data", token: person, json: WebhookTests.upload(78, at: 4))
            let revoked = try await stream.next()
            #expect(revoked.type == "grant.revoked")
            let log = try await api.send(.get, "/api/users/access-log", token: person).items
            #expect(log.contains { $0["channel"] as? String == "stream" })

            // Another party's stream carries nothing of this.
            let (other, _) = try await api.thirdPartySession()
            var foreign = try await EventStreamReader.open(http, port: port, token: other)
            let (otherPerson, _, _) = try await SubscriptionFeedTests.subscribe(api, party: other, types: ["heartRate"])
            let first = try await foreign.next()
            #expect(first.type == "request.granted" && first.json["requestId"] as? String != request)
            _ = otherPerson
            let sse: HTTPFields = [.accept: "text/event-stream"]
            #expect(try await api.send(.get, "/api/thirdparties/stream", token: person, headers: sse).status == .forbidden)
            #expect(try await api.send(.get, "/api/thirdparties/stream", token: party).status == .notAcceptable)
            #expect(
                try await api.send(
                    .get, "/api/thirdparties/stream", token: party, headers: [.accept: "text/event-stream", HTTPField.Name("Last-Event-ID")!: "x"]
                ).problemFields == ["Last-Event-ID"])
        }
    }

    @Test(.timeLimit(.minutes(20))) func anEndedGrantIsAnnouncedAsExpired() async throws {
        try await TestServer.run(configure: { $0.requestExpirySweep = .seconds(1) }) { api in
            let port = try #require(api.client.port)
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { try? http.shutdown().wait() }
            let (person, account) = try await api.individualSession()
            let (party, _) = try await api.thirdPartySession()
            let request = try #require(
                try await api.send(
                    .post, "/api/thirdparties/requests", token: party,
                    json: [
                        "fiscalCode": account["fiscalCode"]!, "types": ["heartRate"], "purpose": "Monitoring", "subscribe": true,
                    ]
                ).string("id"))
            // A grant that ends soon. On a busy machine the answer can reach the server after the
            // end it names: the server refuses it (accessUntil must be in the future) and the
            // request stays pending, so answer again with a later end, until one arrives in time.
            var horizon: TimeInterval = 10
            var accepted = try await api.send(
                .put, "/api/users/requests/\(request)", token: person,
                json: ["decision": "accept", "accessUntil": Date().addingTimeInterval(horizon).formatted(.iso8601)])
            while accepted.status == .unprocessableContent, accepted.problemFields == ["accessUntil"], horizon < 300 {
                horizon *= 2
                accepted = try await api.send(
                    .put, "/api/users/requests/\(request)", token: person,
                    json: ["decision": "accept", "accessUntil": Date().addingTimeInterval(horizon).formatted(.iso8601)])
            }
            try #require(accepted.status == .ok, "\(String(decoding: accepted.data, as: UTF8.self))")
            var stream = try await EventStreamReader.open(http, port: port, token: party)
            #expect(try await stream.next().type == "request.granted")
            let expired = try await stream.next()
            #expect(expired.type == "grant.expired" && expired.json["requestId"] as? String == request)
            let status = try await api.send(.get, "/api/thirdparties/requests/\(request)", token: party)
            #expect(status.string("status") == "expired")
        }
    }
}
