import DatabaseLink
import Foundation
import HTTPAPI
import HTTPTypes
import Testing

@Suite("Webhooks: signed, at least once, in order per grant, stopped by revocation")
struct WebhookTests {
    /// A local receiver is a private address: allowed here as in development, with retries 1,000 times faster.
    static func localDelivery(_ configuration: inout AppConfiguration) {
        configuration.webhookAllowPrivateNetworks = true
        configuration.webhookBackoffScale = 0.001
    }

    static func register(_ api: APIClient, _ token: String, _ url: String, path: String = "/api/thirdparties/webhook") async throws -> String {
        let reply = try await api.send(.put, path, token: token, json: ["url": url])
        #expect(reply.status == .created)
        return try #require(reply.string("secret"))
    }

    static func upload(_ value: Int, at second: Int) -> JSONObject {
        ["items": [["type": "heartRate", "value": value, "start": "2026-11-20T10:00:\(String(format: "%02d", second))Z"] as JSONObject]]
    }

    @Test func endpointsAreHttpAndNeverPrivateUnlessAllowed() async throws {
        try await TestServer.run { api in
            let (party, _) = try await api.thirdPartySession()
            for url in [
                "http://127.0.0.1:8080/hook", "http://10.1.2.3/hook", "http://[::1]/hook", "http://localhost/hook",
                "http://169.254.169.254/latest/meta-data", "ftp://example.com/hook", "not a url", "https://user:pw@example.com/hook",
            ] {
                let reply = try await api.send(.put, "/api/thirdparties/webhook", token: party, json: ["url": url])
                #expect(reply.status == .unprocessableContent, "\(url)")
                #expect(reply.problemFields == ["url"], "\(url)")
            }
            #expect(try await api.send(.get, "/api/thirdparties/webhook", token: party).status == .notFound)
            #expect(try await api.send(.post, "/api/thirdparties/webhook/test", token: party).status == .notFound)

            let created = try await api.send(.put, "/api/thirdparties/webhook", token: party, json: ["url": "https://example.com/hook"])
            #expect(created.status == .created)
            let secret = try #require(created.string("secret"))
            #expect(secret.hasPrefix("d4hw_"))
            let changed = try await api.send(.put, "/api/thirdparties/webhook", token: party, json: ["url": "https://example.org/hook"])
            #expect(changed.status == .ok)
            #expect(changed.json["secret"] == nil)
            #expect(try await api.send(.get, "/api/thirdparties/webhook", token: party).string("url") == "https://example.org/hook")
            let rotated = try await api.send(.post, "/api/thirdparties/webhook/secret", token: party)
            #expect(rotated.string("secret")?.hasPrefix("d4hw_") == true && rotated.string("secret") != secret)

            // Another party sees none of it.
            let (other, _) = try await api.thirdPartySession()
            #expect(try await api.send(.get, "/api/thirdparties/webhook", token: other).status == .notFound)
            #expect(try await api.send(.delete, "/api/thirdparties/webhook", token: party).status == .noContent)
            #expect(try await api.send(.get, "/api/thirdparties/webhook", token: party).status == .notFound)
        }
    }

    @Test func receiverDownThenUpGetsEveryEventOnceInOrderSigned() async throws {
        let receiver = try WebhookReceiver()  // nothing listens yet: connection refused
        try await TestServer.run(configure: Self.localDelivery) { api in
            let (party, _) = try await api.thirdPartySession()
            let secret = try await Self.register(api, party, receiver.url)
            let (person, _, request) = try await SubscriptionFeedTests.subscribe(api, party: party, types: ["heartRate"])
            for (index, value) in [61, 62, 63, 64].enumerated() {
                let upload = try await api.send(.post, "/api/users/data", token: person, json: Self.upload(value, at: index))
                #expect(upload.status == .ok)
            }
            // Attempts fail while the receiver is down, and the log says so.
            var log = try await api.send(.get, "/api/thirdparties/webhook/deliveries", token: party)
            for _ in 0..<200 where !log.items.contains(where: { !(($0["attempts"] as? [Any]) ?? []).isEmpty }) {
                try await Task.sleep(for: .milliseconds(50))
                log = try await api.send(.get, "/api/thirdparties/webhook/deliveries", token: party)
            }
            #expect(log.items.count == 5)
            #expect(log.items.allSatisfy { $0["status"] as? String == "pending" })
            let attempts = log.items.flatMap { ($0["attempts"] as? [[String: Any]]) ?? [] }
            #expect(!attempts.isEmpty && attempts.allSatisfy { $0["statusCode"] is NSNull && $0["error"] is String })

            receiver.answer(.serviceUnavailable)  // up, but failing
            let server = receiver.start()
            defer { server.cancel() }
            try await receiver.wait { !$0.isEmpty }
            receiver.answer(.noContent)
            try await receiver.wait {
                Set($0.map(\.deliveryId)).count == 5 && $0.last.map { $0.type == "data.created" && $0.items.first?["value"] as? Double == 64 } == true
            }

            // After de-duplication by delivery id: each event exactly once, in order, all signed.
            var seen = Set<String>()
            let unique = receiver.received.filter { seen.insert($0.deliveryId).inserted }
            #expect(unique.map(\.type) == ["request.granted", "data.created", "data.created", "data.created", "data.created"])
            #expect(unique.map(\.eventType) == unique.map(\.type))
            #expect(unique.dropFirst().map { $0.items.first?["value"] as? Double } == [61, 62, 63, 64])
            #expect(unique.allSatisfy { $0.json["requestId"] as? String == request && $0.json["id"] as? String == $0.deliveryId })
            #expect(receiver.received.allSatisfy { WebhookReceiver.verify($0, secret: secret) })
            #expect(!receiver.received.contains { WebhookReceiver.verify($0, secret: secret + "x") })

            // The receiver may have an event a moment before the dispatcher records its answer.
            var statuses: [String] = []
            for _ in 0..<200 {
                statuses = try await api.send(.get, "/api/thirdparties/webhook/deliveries", token: party).items.compactMap { $0["status"] as? String }
                if statuses.allSatisfy({ $0 == "delivered" }) { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(statuses.count == 5 && statuses.allSatisfy { $0 == "delivered" }, "\(statuses)")
            // Every attempt the receiver answered may have disclosed its reading (the 503s too): one
            // entry each, under the grant, of one heart-rate item — at least the four data events.
            let disclosures = try await api.send(.get, "/api/users/access-log", token: person).items.filter { $0["channel"] as? String == "webhook" }
            #expect(disclosures.count >= 4)
            #expect(
                disclosures.allSatisfy {
                    $0["requestId"] as? String == request && $0["types"] as? [String] == ["heartRate"] && $0["itemCount"] as? Int == 1
                }, "\(disclosures)")
        }
    }

    /// With a slow retry schedule (the next attempt half an hour after the first failure: thirty
    /// times production's minute, so that a loaded machine taking its time over the set-up cannot
    /// reach the retry), the owner's test ping going through tells that the endpoint is back: the
    /// deliveries waiting for their retry go at once, not at their retry (after a long outage, hours later).
    @Test(.timeLimit(.minutes(20))) func anEndpointBackAfterAnOutageGetsItsWaitingDeliveriesAtOnce() async throws {
        let receiver = try WebhookReceiver()  // down: connection refused
        try await TestServer.run(configure: {
            Self.localDelivery(&$0); $0.webhookBackoffScale = 30
        }) { api in
            let (party, _) = try await api.thirdPartySession()
            _ = try await Self.register(api, party, receiver.url)
            for _ in 0..<2 { _ = try await SubscriptionFeedTests.subscribe(api, party: party, types: ["heartRate"]) }
            // Both grants' first attempt fails; each waits about half an hour for its next. Until an
            // attempt is recorded, a delivery is pending with its first attempt due now, so wait for
            // both attempts (on a loaded machine the dispatcher can take its time over them: a
            // 10-second wait once ran out and the test then read "due now" as the retry).
            var log = try await api.send(.get, "/api/thirdparties/webhook/deliveries", token: party)
            let attempted = ContinuousClock.now + .seconds(180)
            while log.items.count < 2 || !log.items.allSatisfy({ !(($0["attempts"] as? [Any]) ?? []).isEmpty }), ContinuousClock.now < attempted {
                try await Task.sleep(for: .milliseconds(100))
                log = try await api.send(.get, "/api/thirdparties/webhook/deliveries", token: party)
            }
            try #require(log.items.count == 2 && log.items.allSatisfy { !(($0["attempts"] as? [Any]) ?? []).isEmpty }, "\(log.items)")
            #expect(log.items.allSatisfy { $0["status"] as? String == "pending" && $0["nextAttemptAt"] is String })
            let scheduled = try #require(
                log.items.compactMap { ($0["nextAttemptAt"] as? String).flatMap { try? Date($0, strategy: .iso8601) } }.min())
            // The listing reads a delivery and its attempts in one snapshot, so a recorded attempt
            // comes with its retry (backoff 30 × 1 min ± 20 %), never with the lease of the claim.
            #expect(scheduled > Date().addingTimeInterval(600), "retry due \(scheduled)")

            let server = receiver.start()
            defer { server.cancel() }
            #expect(try await api.send(.post, "/api/thirdparties/webhook/test", token: party).status.code < 300)
            try await receiver.wait(timeout: .seconds(45)) { received in
                Set(received.filter { $0.type == "request.granted" }.map(\.deliveryId)).count == 2
            }
            // Both arrived (at the latest now) before the first of their scheduled retries was due.
            #expect(Date() < scheduled, "delivered after the ping, not at the retry scheduled for \(scheduled)")
            #expect(receiver.received.first?.type == "ping")
        }
    }

    @Test func revocationCancelsUndeliveredDataAndTellsTheParty() async throws {
        let receiver = try WebhookReceiver()
        try await TestServer.run(configure: Self.localDelivery) { api in
            let (party, _) = try await api.thirdPartySession()
            _ = try await Self.register(api, party, receiver.url)
            let (person, _, request) = try await SubscriptionFeedTests.subscribe(api, party: party, types: ["heartRate"])
            _ = try await api.send(.post, "/api/users/data", token: person, json: Self.upload(70, at: 1))
            #expect(try await api.send(.post, "/api/users/requests/\(request)/revoke", token: person).status == .ok)

            let server = receiver.start()
            defer { server.cancel() }
            try await receiver.wait { $0.contains { $0.type == "grant.revoked" } }
            // Deliveries go out in order, so once the revocation is in, the data's delivery has
            // been decided: its log entry says it was cancelled, and it never left.
            let log = try await api.send(.get, "/api/thirdparties/webhook/deliveries", token: party).items
            #expect(log.contains { $0["eventType"] as? String == "data.created" && $0["status"] as? String == "cancelled" })
            #expect(Set(receiver.received.map(\.type)) == ["request.granted", "grant.revoked"])  // the data never left

            // Redelivery resends with the same delivery id; a ping is signed like any event.
            let granted = try #require(log.first { $0["eventType"] as? String == "request.granted" })
            let id = try #require(granted["id"] as? String)
            let again = try await api.send(.post, "/api/thirdparties/webhook/deliveries/\(id)/redeliver", token: party)
            #expect(again.status == .accepted)
            try await receiver.wait { $0.filter { $0.deliveryId == id }.count == 2 }
            let ping = try await api.send(.post, "/api/thirdparties/webhook/test", token: party)
            #expect(ping.status == .accepted)
            try await receiver.wait { $0.contains { $0.type == "ping" && $0.deliveryId == ping.string("id") } }

            // Other parties cannot read or redeliver it.
            let (other, _) = try await api.thirdPartySession()
            #expect(try await api.send(.get, "/api/thirdparties/webhook/deliveries/\(id)", token: other).status == .notFound)
            #expect(try await api.send(.post, "/api/thirdparties/webhook/deliveries/\(id)/redeliver", token: other).status == .notFound)
        }
    }

    @Test func erasingTheAccountRevokesItsGrantsAndTellsTheParties() async throws {
        let receiver = try WebhookReceiver()
        try await TestServer.run(configure: Self.localDelivery) { api in
            let (party, _) = try await api.thirdPartySession()
            _ = try await Self.register(api, party, receiver.url)
            let (person, _, request) = try await SubscriptionFeedTests.subscribe(api, party: party, types: ["heartRate"])
            _ = try await api.send(.post, "/api/users/data", token: person, json: Self.upload(80, at: 8))
            let erased = try await api.send(.delete, "/api/users/me", token: person, json: ["password": Fixtures.password])
            #expect(erased.status == .noContent)

            let server = receiver.start()
            defer { server.cancel() }
            try await receiver.wait { $0.contains { $0.type == "grant.revoked" } }
            #expect(receiver.received.map(\.type) == ["request.granted", "grant.revoked"])  // the erased data never left
            #expect(receiver.received.last?.json["requestId"] as? String == request)
            let status = try await api.send(.get, "/api/thirdparties/requests/\(request)", token: party)
            #expect(status.string("status") == "revoked")
        }
    }

    @Test func individualsDeviceHearsOfNewRequests() async throws {
        let receiver = try WebhookReceiver()
        let server = receiver.start()
        defer { server.cancel() }
        try await TestServer.run(configure: Self.localDelivery) { api in
            let (person, account) = try await api.individualSession()
            let secret = try await Self.register(api, person, receiver.url, path: "/api/users/notifications")
            let (party, _) = try await api.thirdPartySession()
            let request = try await api.send(
                .post, "/api/thirdparties/requests", token: party,
                json: [
                    "fiscalCode": account["fiscalCode"]!, "types": ["heartRate"], "purpose": "Cardiology study",
                ]
            ).string("id")
            try await receiver.wait { $0.contains { $0.type == "request.created" } }
            let note = try #require(receiver.received.first)
            #expect(WebhookReceiver.verify(note, secret: secret))
            let data = try #require(note.json["data"] as? [String: Any])
            #expect(data["requestId"] as? String == request)
            #expect(data["purpose"] as? String == "Cardiology study")
            #expect(try await api.send(.get, "/api/users/notifications/deliveries", token: person).items.count == 1)
            #expect(try await api.send(.get, "/api/users/notifications", token: party).status == .forbidden)
        }
    }
}
