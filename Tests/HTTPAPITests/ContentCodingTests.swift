import ExternalPrograms
import Foundation
import HTTPAPI
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing
import ZlibCoding

/// JSON bodies sent gzip- or deflate-coded (`Content-Encoding`), coded by other encoders than
/// ours — GNU gzip and Python's zlib — and every way such a body can be wrong.
@Suite("Request bodies with a content coding")
struct ContentCodingTests {
    /// Three heart-rate items a minute apart, with ids, as JSON.
    static func upload() -> [UInt8] {
        let formatter = ISO8601DateFormatter()
        let items = (0..<3).map { minute in
            let start = formatter.string(from: Date().addingTimeInterval(Double(-600 + 60 * minute)))
            return #"{"id":"coded-\#(minute)","type":"heartRate","value":\#(60 + minute),"unit":"bpm","start":"\#(start)"}"#
        }
        return Array(#"{"items":[\#(items.joined(separator: ","))]}"#.utf8)
    }

    static func gnuGzip(_ bytes: [UInt8]) async throws -> [UInt8] { try await ExternalProgram.filter(bytes, through: ["gzip", "-c", "-9"]) }
    static func pythonDeflate(_ bytes: [UInt8]) async throws -> [UInt8] {
        try await ExternalProgram.filter(
            bytes, through: ["python3", "-c", "import sys, zlib; sys.stdout.buffer.write(zlib.compress(sys.stdin.buffer.read()))"])
    }

    static func post(_ api: APIClient, token: String, _ body: [UInt8], coding: String?) async throws -> APIClient.Reply {
        var headers: HTTPFields = [.authorization: "Bearer \(token)", .contentType: "application/json"]
        if let coding { headers[.contentEncoding] = coding }
        let response = try await api.client.execute(uri: "/api/users/data", method: .post, headers: headers, body: ByteBuffer(bytes: body))
        return APIClient.Reply(status: response.status, headers: response.headers, data: Data((response.body ?? ByteBuffer()).readableBytesView))
    }

    @Test func gzipAndDeflateBodiesFromOtherEncodersAreStoredAsPlainOnes() async throws {
        try await TestServer.run { api in
            let (token, _) = try await api.individualSession()
            let plain = Self.upload()
            let gzipped = try await Self.gnuGzip(plain)
            #expect(gzipped.count > 10 && gzipped[0] == 0x1f && gzipped[1] == 0x8b, "GNU gzip's output")

            let first = try await Self.post(api, token: token, gzipped, coding: "gzip")
            #expect(first.status == .ok)
            #expect(first.json["accepted"] as? Int == 3)
            for (body, coding) in [
                (try await Self.pythonDeflate(plain), "deflate"), (gzipped, "x-gzip"), (gzipped, " GZIP "), (plain, "identity"), (plain, nil),
            ] {
                let again = try await Self.post(api, token: token, body, coding: coding)
                #expect(again.status == .ok, "\(coding ?? "no coding")")
                #expect(again.json["duplicates"] as? Int == 3, "the same three items, \(coding ?? "not coded")")
            }
            let listed = try await api.send(.get, "/api/users/data?type=heartRate", token: token)
            #expect(listed.items.count == 3)
        }
    }

    @Test func badlyCodedBodiesAreRefusedAndStoreNothing() async throws {
        try await TestServer.run(configure: { $0.maxBodyBytes = 64 * 1024 }) { api in
            let (token, _) = try await api.individualSession()
            let plain = Self.upload()
            let gzipped = try await Self.gnuGzip(plain)

            let refusals: [(body: [UInt8], coding: String, words: String)] = [
                (Array(gzipped.dropLast(4)), "gzip", "ends before its gzip stream does"),
                (plain, "gzip", "is not gzip data"),
                (gzipped + Array("{}".utf8), "gzip", "has bytes after the end of its gzip stream"),
                (gzipped + gzipped, "gzip", "has bytes after the end of its gzip stream"),
                (gzipped, "deflate", "is not deflate data"),
                ([0x1f, 0x8b], "gzip", "ends before its gzip stream does"),
            ]
            for refusal in refusals {
                let reply = try await Self.post(api, token: token, refusal.body, coding: refusal.coding)
                #expect(reply.status == .badRequest)
                #expect(reply.string("type") == "tag:data4help,2026:problem:malformed-body")
                #expect(reply.string("detail")?.contains(refusal.words) == true, "\(reply.string("detail") ?? "")")
            }

            // A coding this server does not take: 415, and the codings it takes.
            for coding in ["br", "gzip, gzip", "compress", "gzip;q=1"] {
                let reply = try await Self.post(api, token: token, gzipped, coding: coding)
                #expect(reply.status == .unsupportedMediaType, "\(coding)")
                #expect(reply.string("type") == "tag:data4help,2026:problem:unsupported-content-encoding")
                #expect(reply.headers[.acceptEncoding] == "gzip, deflate")
            }

            // A bomb: 8 MB of spaces inside the array is 8 kB gzip-coded, under the 64 kB limit;
            // decoded it passes the limit and is refused there.
            let bomb = try await Self.gnuGzip(Array(#"{"items":["#.utf8) + [UInt8](repeating: 0x20, count: 8_000_000) + Array("]}".utf8))
            #expect(bomb.count < 64 * 1024)
            let tooLarge = try await Self.post(api, token: token, bomb, coding: "gzip")
            #expect(tooLarge.status == .contentTooLarge)
            #expect(tooLarge.string("type") == "tag:data4help,2026:problem:body-too-large")

            let listed = try await api.send(.get, "/api/users/data?type=heartRate", token: token)
            #expect(listed.status == .ok)
            #expect(listed.items.isEmpty, "nothing stored")
        }
    }

    /// The limit is exact: a body that decodes to the limit is taken, a byte more is not.
    @Test func theLimitHoldsToTheByteAfterDecoding() async throws {
        let body = Self.upload()
        for coding in [ContentCoding.gzip, .deflate] {
            let coded = ByteBuffer(bytes: try await coding == .gzip ? Self.gnuGzip(body) : Self.pythonDeflate(body))
            #expect(try coding.decode(coded, limit: body.count) == ByteBuffer(bytes: body))
            #expect(throws: ContentCoding.Failure.tooLarge) { try coding.decode(coded, limit: body.count - 1) }
            // Our own encoder, which the kit and the bench use, is read by Python's zlib.
            let format = try #require(coding.format)
            let ours = try #require(ZlibDeflate.compress(body, format: format))
            let python = try await ExternalProgram.pythonInflate(ours, windowBits: Int(format.windowBits))
            #expect(python == body)
        }
        #expect(ContentCoding(header: nil) == .identity)
        #expect(ContentCoding(header: "identity, gzip") == .gzip)
        #expect(ContentCoding(header: "gzip, br") == nil)
    }
}
