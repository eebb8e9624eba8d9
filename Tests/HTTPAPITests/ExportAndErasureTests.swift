import Foundation
import HTTPAPI
import HTTPTypes
import Testing

@Suite("Export and erasure of an individual's data")
struct ExportAndErasureTests {
    @Test func largeAccountIsExportedCompletelyAsAStream() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            let start = Date(timeIntervalSince1970: 1_790_000_000)
            for batch in 0..<3 {  // 30,000 heart-rate samples: six export pages
                let items = OwnDataListingTests.heartRates(from: start.addingTimeInterval(Double(batch) * 10_000), count: 10_000)
                let stored = try await api.send(.post, "/api/users/data", token: token, json: ["items": items])
                #expect(stored.json["accepted"] as? Int == 10_000)
            }
            let fixes: [any Sendable] = [["latitude": 45.0, "longitude": 9.0, "time": "2026-11-01T10:00:00Z"] as JSONObject]
            _ = try await api.send(.post, "/api/users/data", token: token, json: ["items": fixes])

            let export = try await api.send(.get, "/api/users/export", token: token)
            #expect(export.status == .ok)
            #expect(export.headers[.contentType] == "application/x-ndjson")
            #expect(export.headers[.contentLength] == nil)  // streamed, not built in memory first
            let lines = String(decoding: export.data, as: UTF8.self).split(separator: "\n").map {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:]
            }
            #expect(lines.first?["kind"] as? String == "profile")
            #expect(lines.filter { $0["kind"] as? String == "sample" }.count == 30_000)
            #expect(lines.filter { $0["kind"] as? String == "location" }.count == 1)
            #expect(lines.last?["kind"] as? String == "end")
            #expect(lines.last?["samples"] as? Int == 30_000)
            let starts = lines.compactMap { $0["kind"] as? String == "sample" ? $0["start"] as? String : nil }
            #expect(starts == starts.sorted())
        }
    }

    @Test func erasureNeedsThePasswordAndRemovesEverything() async throws {
        try await TestServer.run { api in
            let (token, account) = try await api.individualSession()
            let other = try await api.send(.post, "/api/users/login", json: ["email": account["email"]!, "password": Fixtures.password]).string(
                "token")
            _ = try await api.send(
                .post, "/api/users/data", token: token,
                json: ["items": OwnDataListingTests.heartRates(from: Date().addingTimeInterval(-3600), count: 10)])

            #expect(try await api.send(.delete, "/api/users/me", token: token, json: [:]).problemFields == ["password"])
            #expect(try await api.send(.delete, "/api/users/me", token: token, json: ["password": "not my password"]).problemFields == ["password"])
            #expect(try await api.send(.get, "/api/users/me", token: token).status == .ok)

            #expect(try await api.send(.delete, "/api/users/me", token: token, json: ["password": Fixtures.password]).status == .noContent)
            #expect(try await api.send(.get, "/api/users/me", token: token).status == .unauthorized)
            #expect(try await api.send(.get, "/api/users/data", token: other).status == .unauthorized)
            let login = try await api.send(.post, "/api/users/login", json: ["email": account["email"]!, "password": Fixtures.password])
            #expect(login.status == .unauthorized)
            // The email and fiscal code are free again.
            #expect(try await api.registerAndConfirm(surface: "users", account).status == .created)
        }
    }
}
