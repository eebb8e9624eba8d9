import AsyncHTTPClient
import DatabaseTestSupport
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import Testing

/// Two instances on one database, each keeping the credentials it resolved — the in-process test
/// server and a real `data4help serve` process, so that the only way news reaches the process is
/// the database's announcement (migration 0042): a logout on the first stops the token on the
/// process — long before the process's cache lifetime (600 s here) — and on the first at once; a
/// revoked API key likewise. How fast it arrives is measured by `data4help bench reads`, not
/// asserted here: on a loaded machine one request to the process can take a second by itself.
@Suite("Cached credentials stop working on every instance when revoked")
struct CredentialCacheRevocationTests {
    /// The status of `GET path` on the process, with a bearer credential.
    static func status(_ port: Int, _ path: String, _ bearer: String) async throws -> HTTPResponseStatus {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.headers.add(name: "Authorization", value: "Bearer \(bearer)")
        return try await HTTPClient.shared.execute(request, timeout: .seconds(10)).status
    }

    /// How long the process went on answering 200 after `start` (at most 20 s).
    static func stillAnswered(
        _ port: Int, _ path: String, _ bearer: String, since start: ContinuousClock.Instant
    ) async throws -> (
        HTTPResponseStatus, Duration
    ) {
        var status = try await Self.status(port, path, bearer)
        while status == .ok, ContinuousClock.now - start < .seconds(20) {
            try await Task.sleep(for: .milliseconds(20))
            status = try await Self.status(port, path, bearer)
        }
        return (status, ContinuousClock.now - start)
    }

    @Test(.timeLimit(.minutes(20)))
    func aRevocationReachesTheOtherInstanceWithinASecond() async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        let other = try await BalancedPairTests.Instance(database: database, environment: ["CREDENTIAL_CACHE_SECONDS": "600"])
        defer { other.stop() }
        try await BalancedPairTests.waitReady(other.port)
        try await TestServer.run(database: database) { first in
            let (token, _) = try await first.individualSession()
            // Both instances resolve it, then answer from memory.
            for _ in 0..<3 {
                #expect(try await first.send(.get, "/api/users/me", token: token).status == .ok)
                #expect(try await Self.status(other.port, "/api/users/me", token) == .ok)
            }
            #expect(try await first.send(.post, "/api/users/logout", token: token).status == .noContent)
            let revoked = ContinuousClock.now
            #expect(try await first.send(.get, "/api/users/me", token: token).status == .unauthorized)
            let (status, took) = try await Self.stillAnswered(other.port, "/api/users/me", token, since: revoked)
            #expect(status == .unauthorized, "the other instance still answered after \(took)")

            // An API key, revoked through the first instance, used on the process.
            let (party, _) = try await first.thirdPartySession()
            let created = try await first.send(.post, "/api/thirdparties/keys", token: party, json: ["name": "cache test"])
            let key = try #require(created.string("key")), keyId = try #require(created.string("id"))
            #expect(try await Self.status(other.port, "/api/thirdparties/me", key) == .ok)
            #expect(try await Self.status(other.port, "/api/thirdparties/me", key) == .ok)
            #expect(try await first.send(.delete, "/api/thirdparties/keys/\(keyId)", token: party).status.code < 300)
            let (keyStatus, keyTook) = try await Self.stillAnswered(other.port, "/api/thirdparties/me", key, since: .now)
            #expect(keyStatus == .unauthorized, "the other instance still answered after \(keyTook)")
        }
    }
}
