import AccessManager
import AsyncHTTPClient
import DatabaseLink
import DatabaseTestSupport
import ExternalPrograms
import Foundation
import HTTPAPI
import HTTPTypes
import Testing

/// Requests an attacker would send, each to a real `data4help serve` process: a single request
/// used to end the process (a Swift trap on a client's number), so the proof is that the same
/// process still answers `/readyz` afterwards — and that each was refused with a problem naming
/// its field.
@Suite("Hostile requests never take the server down", .serialized)
struct HostileRequestTests {
    /// A real server process on a fresh database, with `body` run against it; afterwards the
    /// process must still be running and ready.
    static func withServerProcess(_ body: (RemoteAPI) async throws -> Void) async throws {
        let database = try await TestPostgres.shared.migratedDatabase()
        let instance = try await BalancedPairTests.Instance(database: database)
        defer { instance.stop() }
        try await BalancedPairTests.waitReady(instance.port)
        let api = RemoteAPI(base: "http://127.0.0.1:\(instance.port)")
        try await body(api)
        #expect(
            instance.process.isRunning, "the server process ended (\(instance.process.terminationStatus.map { "\($0)" } ?? "running"))")
        #expect(try await api.send(.get, "/readyz").status == .ok)
    }

    @Test(.timeLimit(.minutes(20))) func hugeAndNonFiniteNumbersAreFieldErrors() async throws {
        try await Self.withServerProcess { api in
            let (party, _) = try await api.thirdPartySession()
            let headers: HTTPFields = [.authorization: "Bearer \(party)", .contentType: "application/json"]
            for epsilon in ["99999999999999999999", "1e300", "-1e300", "1e-300", "1.7976931348623157e308"] {
                let reply = try await api.send(
                    .post, "/api/thirdparties/aggregates", token: nil, json: nil,
                    raw: """
                        {"type":"heartRate","statistic":"mean","from":"2026-01-01","to":"2026-01-31","epsilon":\(epsilon)}
                        """, headers: headers)
                #expect(reply.status == .unprocessableContent && reply.problemFields == ["epsilon"], "epsilon \(epsilon): \(reply.status)")
            }
            // The individuals' AutomatedSOS form: integers that are not (1e300, nan, inf).
            let (_, account) = try await api.individualSession()
            var me = try await IndividualPortalTests.signIn(api, account)
            for (field, value) in [
                ("consecutiveReadings", "1e300"), ("consecutiveReadings", "nan"), ("cancelWindowSeconds", "inf"), ("cancelWindowSeconds", "-9e18"),
            ] {
                let csrf = try PortalBrowser.csrf(try await me.send(.get, "/me/sos"))
                let reply = try await me.send(.post, "/me/sos", form: [("csrf", csrf), ("enabled", "true"), (field, value)])
                #expect(
                    reply.status == .unprocessableContent && PortalBrowser.html(reply).contains("id=\"\(field)-error\""),
                    "\(field)=\(value): \(reply.status)")
            }
        }
    }

    @Test(.timeLimit(.minutes(20))) func forgedCursorsAreRefused() async throws {
        try await Self.withServerProcess { api in
            let (person, _) = try await api.individualSession()
            // The cursors of the report: well-formed under the old unauthenticated scheme, with
            // Int64.max and Int64.min where a time belongs.
            let forged =
                [
                    "s1|desc|9223372036854775807|32767|9223372036854775807", "s1|asc|-9223372036854775808|0|0", "l1|desc|9223372036854775807|1",
                    "k1|9223372036854775807",
                ]
                .map { Data($0.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "") } + [
                    "", "%00", String(repeating: "A", count: 400),
                ]
            for cursor in forged {
                for path in ["/api/users/data", "/api/users/data/locations", "/api/users/requests"] {
                    let reply = try await api.send(.get, "\(path)?cursor=\(cursor)", token: person)
                    #expect(
                        reply.status == .unprocessableContent && reply.problemFields == ["cursor"], "\(path) \(cursor.prefix(40)): \(reply.status)")
                }
            }
            // A cursor the server issued still works, and one with a byte changed does not.
            let items: [any Sendable] = (0..<3).map { ["type": "heartRate", "value": 70 + $0, "start": "2026-11-20T08:3\($0):00Z"] as JSONObject }
            #expect(try await api.send(.post, "/api/users/data", token: person, json: ["items": items]).status == .ok)
            let first = try await api.send(.get, "/api/users/data?limit=1", token: person)
            let next = try #require(first.string("nextCursor"))
            #expect(try await api.send(.get, "/api/users/data?limit=1&cursor=\(next)", token: person).items.count == 1)
            var edited = Array(next)
            edited[2] = edited[2] == "A" ? "B" : "A"
            #expect(try await api.send(.get, "/api/users/data?limit=1&cursor=\(String(edited))", token: person).problemFields == ["cursor"])
        }
    }

    @Test(.timeLimit(.minutes(20))) func aClientsCookieIsNeverEchoedIntoSetCookie() async throws {
        try await Self.withServerProcess { api in
            for path in ["/me/login", "/portal/login", "/portal/signup"] {
                let reply = try await api.send(.get, path, token: nil, json: nil, raw: nil, headers: [.cookie: #"d4h_csrf=abc,%20d4h_me=evil"x"#])
                let cookies = reply.headers[values: .setCookie]
                #expect(reply.status == .ok && !cookies.isEmpty, "\(path)")
                // Each value is the server's own: empty (a removal) or a fresh random token, never
                // the client's "abc" or anything of `evil"x` (a token may hold "abc" by chance).
                let values = cookies.map { $0.split(separator: ";", maxSplits: 1)[0].split(separator: "=", maxSplits: 1).dropFirst().first ?? "" }
                let ownToken = { (value: Substring) in
                    value.isEmpty || (value.count >= 32 && value.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" })
                }
                #expect(values.allSatisfy(ownToken), "\(path): \(cookies)")
            }
        }
    }

    @Test(.timeLimit(.minutes(20))) func xmlEntityDeclarationsAreRefusedBeforeParsing() async throws {
        try await Self.withServerProcess { api in
            let (organiser, _) = try await api.individualSession()
            // The report's body: one 50,000-character entity referenced 80,000 times (~4 GB expanded).
            let entity = String(repeating: "x", count: 50_000)
            let references = String(repeating: "&big;", count: 80_000)
            let bomb = """
                <?xml version="1.0"?><!DOCTYPE gpx [<!ENTITY big "\(entity)">]><gpx version="1.1"><trk><name>\(references)</name><trkseg>
                <trkpt lat="45.4755" lon="9.1725"/><trkpt lat="45.4820" lon="9.1600"/></trkseg></trk></gpx>
                """
            let headers: HTTPFields = [.authorization: "Bearer \(organiser)", .contentType: "application/gpx+xml"]
            let reply = try await api.send(.post, "/api/users/runs?\(RunEventTests.gpxQuery)", token: nil, json: nil, raw: bomb, headers: headers)
            #expect(reply.status == .unprocessableContent && reply.problemFields == ["body"])
            #expect(reply.string("detail")?.contains("entities") == true || String(decoding: reply.data, as: UTF8.self).contains("ENTITY"))
            let parameter = #"<?xml version="1.0"?><!DOCTYPE gpx [<!ENTITY % p "x">]><gpx version="1.1"/>"#
            #expect(
                try await api.send(.post, "/api/users/runs?\(RunEventTests.gpxQuery)", token: nil, json: nil, raw: parameter, headers: headers)
                    .problemFields == ["body"])
        }
    }

    /// A number that does not fit its integer field is a 422 naming the field, not "not JSON".
    @Test func aNumberThatDoesNotFitItsFieldIsNamed() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            for value in ["1.5", "1e20", "99999999999999999999"] {
                let reply = try await api.send(
                    .put, "/api/users/sos", token: token, raw: #"{"enabled": true, "minHeartRate": 40.5, "consecutiveReadings": \#(value)}"#)
                #expect(reply.status == .unprocessableContent && reply.problemFields == ["consecutiveReadings"], "\(value): \(reply.status)")
            }
            let items = #"{"items":[{"type":"heartRate","value":70,"start":"2026-11-20T08:30:00Z"}],"extra":{"list":[1,2.5]}}"#
            #expect(try await api.send(.post, "/api/users/data", token: token, raw: items).status == .ok)
            #expect(try await api.send(.put, "/api/users/sos", token: token, raw: #"{"enabled": tru}"#).status == .badRequest)  // not JSON at all
        }
    }

    /// With a stolen token, the password still cannot be guessed through the account's own
    /// routes: a wrong current password counts as a failed sign-in, and the limit answers 429.
    @Test func passwordChecksOnASignedInAccountAreThrottled() async throws {
        try await TestServer.run(configure: { $0.loginThrottle.perAccount = 3 }) { api in
            let (token, account) = try await api.individualSession()
            for _ in 1...3 {
                let wrong = try await api.send(
                    .patch, "/api/users/me", token: token, json: ["email": "thief@example.org", "currentPassword": "not the password"])
                #expect(wrong.problemFields == ["currentPassword"])
            }
            let closed = try await api.send(
                .patch, "/api/users/me", token: token, json: ["password": "a brand new secret", "currentPassword": Fixtures.password])
            #expect(
                closed.status == .tooManyRequests && closed.headers[.retryAfter] != nil,
                "\(closed.status) \(String(decoding: closed.data, as: UTF8.self))")
            #expect(try await api.send(.delete, "/api/users/me", token: token, json: ["password": Fixtures.password]).status == .tooManyRequests)
            // Sign-in is closed for the account too: the guesses were sign-in failures.
            #expect(
                try await api.send(.post, "/api/users/login", json: ["email": account["email"]!, "password": Fixtures.password]).status
                    == .tooManyRequests)
            #expect(try await api.send(.get, "/api/users/me", token: token).string("email") == account["email"] as? String)
        }
    }
}

extension HostileRequestTests {
    /// Requests NIO's HTTP parser refuses never reach a route: they used to get an empty 400 from
    /// the framework. Each now gets a problem document (501 for a method the parser does not know,
    /// 400 for a broken request line or header), on the first request of a connection and after a
    /// good one, and the connection is closed.
    @Test(.timeLimit(.minutes(20))) func requestsTheParserRefusesGetAProblemDocument() async throws {
        try await Self.withServerProcess { api in
            let port = try #require(URLComponents(string: api.base)?.port)
            let cases: [(request: String, status: Int, slug: String)] = [
                ("FROB /api/runs HTTP/1.1\r\nHost: x\r\n\r\n", 501, "method-not-implemented"),
                ("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\nFROB /api/runs HTTP/1.1\r\nHost: x\r\n\r\n", 501, "method-not-implemented"),
                ("GET /api runs HTTP/1.1\r\nHost: x\r\n\r\n", 400, "malformed-request"),
                ("GET /readyz HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n", 400, "malformed-request"),
                ("GET /readyz HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400, "malformed-request"),
            ]
            for (request, status, slug) in cases {
                let answer = try await RawHTTP.exchange(port: port, request)
                let last = answer.range(of: "HTTP/1.1 ", options: .backwards).map { String(answer[$0.lowerBound...]) } ?? answer
                #expect(last.hasPrefix("HTTP/1.1 \(status) "), "\(request.debugDescription): \(last.debugDescription)")
                #expect(last.lowercased().contains("content-type: application/problem+json"), "\(request.debugDescription): \(last.debugDescription)")
                #expect(last.contains("tag:data4help,2026:problem:\(slug)"), "\(request.debugDescription): \(last.debugDescription)")
                #expect(last.lowercased().contains("connection: close"), "\(request.debugDescription): \(last.debugDescription)")
            }
        }
    }
}
