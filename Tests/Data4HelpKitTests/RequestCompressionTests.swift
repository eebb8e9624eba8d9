import ExternalPrograms
import Foundation
import HTTPTypes
import OpenAPIRuntime
import Testing

@testable import Data4HelpKit

/// The kit's gzip-coded request bodies, seen from the wire: which bodies it codes, that another
/// decoder (Python's zlib) reads them back byte for byte, and what it does when a server or proxy
/// refuses the coding. (Data4HelpKitTests in HTTPAPITests uploads through it to a real server.)
@Suite("Data4HelpKit's coded request bodies")
struct RequestCompressionTests {
    /// What reached the transport: the request and its body's bytes.
    actor Wire {
        var sent: [(request: HTTPRequest, bytes: [UInt8])] = []
        /// Answers given in turn (then 200).
        var answers: [HTTPResponse]
        init(answers: [HTTPResponse] = []) { self.answers = answers }

        func receive(_ request: HTTPRequest, _ body: HTTPBody?) async throws -> (HTTPResponse, HTTPBody?) {
            var bytes: [UInt8] = []
            if let body { bytes = try await [UInt8](collecting: body, upTo: 64 << 20) }
            sent.append((request, bytes))
            return (answers.isEmpty ? HTTPResponse(status: .ok) : answers.removeFirst(), HTTPBody("{}"))
        }
    }

    static func request(_ contentType: String? = "application/json") -> HTTPRequest {
        var request = HTTPRequest(method: .post, scheme: "http", authority: "server.test", path: "/api/users/data")
        if let contentType { request.headerFields[.contentType] = contentType }
        return request
    }

    /// A JSON upload of `items` heart-rate readings, as the sync engine sends them.
    static func upload(_ items: Int) -> [UInt8] {
        let entries = (0..<items).map {
            #"{"id":"w-\#($0)","type":"heartRate","value":\#(60 + $0 % 40),"start":"2026-12-07T10:00:\#($0 % 60).250Z"}"#
        }
        return Array(#"{"items":[\#(entries.joined(separator: ","))]}"#.utf8)
    }

    static func send(
        _ middleware: RequestCompression, _ wire: Wire, _ body: HTTPBody?, request: HTTPRequest = request(), operation: String = "uploadData"
    ) async throws -> HTTPResponse {
        try await middleware.intercept(request, body: body, baseURL: URL(string: "http://server.test")!, operationID: operation) { request, body, _ in
            try await wire.receive(request, body)
        }.0
    }

    @Test func aJSONUploadGoesGzipCodedAndDecodesToTheSameBytes() async throws {
        let wire = Wire()
        let plain = Self.upload(1_000)
        _ = try await Self.send(RequestCompression(), wire, HTTPBody(plain), request: Self.request("application/json; charset=utf-8"))
        let sent = try #require(await wire.sent.first)
        #expect(sent.request.headerFields[.contentEncoding] == "gzip")
        #expect(sent.bytes.count * 5 < plain.count, "\(plain.count) bytes coded as \(sent.bytes.count)")
        #expect(try await ExternalProgram.pythonInflate(sent.bytes, windowBits: 31) == plain)
    }

    @Test func smallOtherTypedUnknownLengthAndCodedBodiesGoAsTheyAre() async throws {
        let wire = Wire()
        let plain = Self.upload(100)
        let small = Array(#"{"email":"ada@example.org","password":"correct horse battery"}"#.utf8)
        var alreadyCoded = Self.request()
        alreadyCoded.headerFields[.contentEncoding] = "br"
        let cases: [(HTTPRequest, HTTPBody?, String)] = [
            (Self.request(), HTTPBody(small), "a sign-in's few bytes"),
            (Self.request("application/gpx+xml"), HTTPBody(plain), "a file (another type)"),
            (Self.request(nil), HTTPBody(plain), "no type"),
            (
                Self.request(),
                HTTPBody(
                    AsyncStream {
                        $0.yield(ArraySlice(plain)); $0.finish()
                    }, length: .unknown), "unknown length"
            ),
            (alreadyCoded, HTTPBody(plain), "coded already"),
            (Self.request(), nil, "no body"),
        ]
        for (request, body, what) in cases {
            _ = try await Self.send(RequestCompression(), wire, body, request: request)
            let sent = try #require(await wire.sent.last, "\(what)")
            #expect(sent.request.headerFields[.contentEncoding] == request.headerFields[.contentEncoding], "\(what)")
            #expect(sent.bytes.count == (body == nil ? 0 : what == "a sign-in's few bytes" ? small.count : plain.count), "\(what)")
        }
        // Bytes that coding would not make smaller go as they are too.
        var random = SystemRandomNumberGenerator()
        let noise = (0..<4_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        _ = try await Self.send(RequestCompression(), wire, HTTPBody(noise))
        let sentNoise = try #require(await wire.sent.last)
        #expect(sentNoise.request.headerFields[.contentEncoding] == nil)
        #expect(sentNoise.bytes == noise)
    }

    @Test func aRefusedCodingIsSentAgainPlainAndNotTriedAgainForThatOperation() async throws {
        var refusal = HTTPResponse(status: .unsupportedMediaType)
        refusal.headerFields[.acceptEncoding] = "identity"
        let wire = Wire(answers: [refusal])
        let middleware = RequestCompression()
        let plain = Self.upload(500)

        let first = try await Self.send(middleware, wire, HTTPBody(plain))
        #expect(first.status == .ok, "the plain body's answer is the one returned")
        var sent = await wire.sent
        #expect(sent.count == 2)
        #expect(sent.map { $0.request.headerFields[.contentEncoding] } == ["gzip", nil])
        #expect(sent.last?.bytes == plain)

        // The same operation goes plain from now on; another one is still coded.
        _ = try await Self.send(middleware, wire, HTTPBody(plain))
        _ = try await Self.send(middleware, wire, HTTPBody(plain), operation: "uploadLocations")
        sent = await wire.sent
        #expect(sent.count == 4)
        #expect(sent.dropFirst(2).map { $0.request.headerFields[.contentEncoding] } == [nil, "gzip"])
    }

    @Test func a415ThatTakesGzipIsAboutSomethingElseAndIsReturnedAsItIs() async throws {
        var refusal = HTTPResponse(status: .unsupportedMediaType)
        refusal.headerFields[.acceptEncoding] = "gzip, deflate"
        let wire = Wire(answers: [refusal])
        let answer = try await Self.send(RequestCompression(), wire, HTTPBody(Self.upload(500)))
        #expect(answer.status == .unsupportedMediaType)
        #expect(await wire.sent.count == 1)
    }

    @Test func acceptEncodingListsAreRead() {
        #expect(RequestCompression.listsGzip("gzip, deflate"))
        #expect(RequestCompression.listsGzip("deflate, GZIP;q=0.5"))
        #expect(RequestCompression.listsGzip("*"))
        #expect(!RequestCompression.listsGzip("identity"))
        #expect(!RequestCompression.listsGzip("gzip;q=0, deflate"))
        #expect(!RequestCompression.listsGzip(""))
        #expect(!RequestCompression.listsGzip(nil))
        #expect(RequestCompression.isJSON("application/merge-patch+json"))
        #expect(!RequestCompression.isJSON("application/zip"))
    }
}
