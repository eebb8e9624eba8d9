import AsyncHTTPClient
import DatabaseLink
import DatabaseTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

/// OpenTelemetry traces of a real `data4help serve` process, configured only by the standard
/// `OTEL_*` variables, exported with OTLP/HTTP (JSON) to a collector this test runs and keeps in
/// memory: the caller's `traceparent` continued by the request's span (named after its route
/// template), a span per SQL statement under it, the trace id in the request's log lines and in a
/// problem body, and a webhook attempt's span whose context reaches the receiver as `traceparent`.
@Suite("Traces through OTLP")
struct TracingTests {
    /// A span as the collector received it (ids as hex).
    struct ExportedSpan: Sendable {
        let traceId: String
        let spanId: String
        let parentSpanId: String
        let name: String
        let attributes: [String: String]
    }

    /// An OTLP/HTTP collector (`POST /v1/traces`, JSON) and a webhook receiver on one port.
    final class Collector: Sendable {
        let port: Int
        private let reservation: LoopbackPortReservation
        private let state = Mutex<(spans: [ExportedSpan], traceparents: [String])>(([], []))

        init() throws {
            reservation = try LoopbackPortReservation()
            port = reservation.port
        }

        var spans: [ExportedSpan] { state.withLock { $0.spans } }
        var traceparents: [String] { state.withLock { $0.traceparents } }

        func start() -> LocalServer {
            reservation.release()
            let router = Router()
            router.post("v1/traces") { request, _ -> Response in
                let body = try await request.body.collect(upTo: 16 * 1024 * 1024)
                let spans = Self.spans(inOTLPJSON: Data(body.readableBytesView))
                self.state.withLock { $0.spans += spans }
                return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: "{}")))
            }
            router.post("hooks/data4help") { request, _ -> Response in
                let parent = request.headers[HTTPField.Name("traceparent")!] ?? ""
                self.state.withLock { $0.traceparents.append(parent) }
                return Response(status: .noContent)
            }
            return LocalServer(Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port))))
        }

        /// `resourceSpans[].scopeSpans[].spans[]`; ids are hex in OTLP/JSON (base64 accepted too).
        static func spans(inOTLPJSON data: Data) -> [ExportedSpan] {
            guard let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [] }
            var found: [ExportedSpan] = []
            for resource in root["resourceSpans"] as? [[String: Any]] ?? [] {
                for scope in resource["scopeSpans"] as? [[String: Any]] ?? [] {
                    for span in scope["spans"] as? [[String: Any]] ?? [] {
                        var attributes: [String: String] = [:]
                        for attribute in span["attributes"] as? [[String: Any]] ?? [] {
                            guard let key = attribute["key"] as? String, let value = attribute["value"] as? [String: Any] else { continue }
                            attributes[key] = value.values.first.map { "\($0)" }
                        }
                        found.append(
                            ExportedSpan(
                                traceId: hex(span["traceId"]), spanId: hex(span["spanId"]), parentSpanId: hex(span["parentSpanId"]),
                                name: span["name"] as? String ?? "", attributes: attributes))
                    }
                }
            }
            return found
        }

        static func hex(_ value: Any?) -> String {
            guard let text = value as? String, !text.isEmpty else { return "" }
            if text.allSatisfy(\.isHexDigit), text.count == 16 || text.count == 32 { return text.lowercased() }
            return Data(base64Encoded: text).map { $0.map { String(format: "%02x", $0) }.joined() } ?? text
        }

        func waitFor(timeout: Duration = .seconds(60), _ condition: ([ExportedSpan]) -> Bool) async throws {
            let deadline = ContinuousClock.now + timeout
            while !condition(spans) {
                guard ContinuousClock.now < deadline else { throw WebhookReceiver.TimedOut() }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    static func randomHex(_ bytes: Int) -> String {
        (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    static func send(
        _ port: Int, _ path: String, method: NIOHTTP1.HTTPMethod = .GET, token: String? = nil, traceparent: String? = nil, json: String? = nil
    ) async throws -> (status: Int, body: [String: Any]) {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let traceparent { request.headers.add(name: "traceparent", value: traceparent) }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: json))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]) ?? [:])
    }

    @Test(.timeLimit(.minutes(20)))
    func spansOfRequestsStatementsAndWebhooksReachTheCollector() async throws {
        let collector = try Collector()
        let listening = collector.start()
        defer { listening.cancel() }
        let log = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("traced-\(UUID().uuidString.prefix(8)).log")
        defer { try? FileManager.default.removeItem(at: log) }
        let server = try await BalancedPairTests.Instance(
            database: try await TestPostgres.shared.migratedDatabase(),
            environment: [
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:\(collector.port)/v1/traces",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_SERVICE_NAME": "data4help-test",
                "LOG_LEVEL": "info", "WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
            ], output: log)
        defer { server.stop() }
        try await BalancedPairTests.waitReady(server.port)

        // A signed-in individual, through the kit's tested path (Data4HelpKitTests).
        let credential = Data4HelpKitTests.Credential()
        _ = try await Data4HelpKitTests.signUpIndividual(Data4HelpKitTests.client(server.port, credential), credential)
        let token = try #require(credential.get())

        // The caller's trace goes on in the request's span; its statements are its children.
        let traceId = Self.randomHex(16), callerSpan = Self.randomHex(8)
        #expect(try await Self.send(server.port, "/api/users/me", token: token, traceparent: "00-\(traceId)-\(callerSpan)-01").status == 200)
        try await collector.waitFor { spans in spans.contains { $0.traceId == traceId && $0.name == "GET /api/users/me" } }
        let request = try #require(collector.spans.first { $0.traceId == traceId && $0.name == "GET /api/users/me" })
        #expect(request.parentSpanId == callerSpan, "the request's span continues the caller's")
        #expect(request.attributes["http.route"] == "/api/users/me")
        #expect(request.attributes["http.response.status_code"] == "200")
        #expect(request.attributes.keys.allSatisfy { !$0.hasPrefix("url.") && !$0.contains("header") }, "nothing a caller sent is recorded")
        try await collector.waitFor { spans in spans.contains { $0.traceId == traceId && $0.parentSpanId == request.spanId } }
        let statements = collector.spans.filter { $0.traceId == traceId && $0.parentSpanId == request.spanId }
        #expect(statements.allSatisfy { $0.attributes["db.system.name"] == "postgresql" }, "\(statements.map(\.name))")
        #expect(statements.allSatisfy { !$0.name.contains(token) && !$0.name.contains("'") }, "a statement's span is named, not valued")

        // A problem names the trace.
        let problemTrace = Self.randomHex(16)
        let missing = try await Self.send(
            server.port, "/api/users/requests/\(UUID().uuidString.lowercased())", token: token,
            traceparent: "00-\(problemTrace)-\(Self.randomHex(8))-01")
        #expect(missing.status == 404)
        #expect(missing.body["traceId"] as? String == problemTrace)

        // A malformed or all-zero traceparent is not continued: the request is answered as usual,
        // in a trace of its own (W3C Trace Context: such a header is ignored).
        for garbage in [
            "00-\(Self.randomHex(15))-\(Self.randomHex(8))-01", "00-00000000000000000000000000000000-\(Self.randomHex(8))-01",
            "zz-\(Self.randomHex(16))-\(Self.randomHex(8))-01", "00-\(Self.randomHex(16))-0000000000000000-01", String(repeating: "-", count: 4_000),
        ] {
            let reply = try await Self.send(
                server.port, "/api/users/requests/\(UUID().uuidString.lowercased())", token: token, traceparent: garbage)
            #expect(reply.status == 404, "\(garbage.prefix(60))")
            let trace = try #require(reply.body["traceId"] as? String)
            #expect(trace.count == 32 && trace != String(repeating: "0", count: 32) && !garbage.contains(trace), "\(garbage.prefix(60))")
        }

        // The request's log lines carry its trace id.
        try await Task.sleep(for: .milliseconds(200))
        let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
        let requestLines = lines.filter { $0.contains("/api/users/me") }
        #expect(!requestLines.isEmpty, "no log line of the request")
        #expect(requestLines.allSatisfy { $0.contains("\"trace_id\":\"\(traceId)\"") }, "\(requestLines)")

        // A third party's webhook test: the attempt's span, and its context at the receiver.
        let email = "trace-\(Fixtures.unique())@acme.test"
        _ = try await Self.send(
            server.port, "/api/thirdparties/registration", method: .POST,
            json: #"{"name":"Trace Lab","email":"\#(email)","password":"\#(Fixtures.password)"}"#)
        let confirmation = try await Mailbox.confirmationToken(for: email)
        _ = try await Self.send(server.port, "/api/thirdparties/registration/confirmation", method: .POST, json: #"{"token":"\#(confirmation)"}"#)
        let login = try await Self.send(
            server.port, "/api/thirdparties/login", method: .POST, json: #"{"email":"\#(email)","password":"\#(Fixtures.password)"}"#)
        let party = try #require(login.body["token"] as? String)
        let hook = "http://127.0.0.1:\(collector.port)/hooks/data4help"
        #expect(try await Self.send(server.port, "/api/thirdparties/webhook", method: .PUT, token: party, json: #"{"url":"\#(hook)"}"#).status < 300)
        #expect(try await Self.send(server.port, "/api/thirdparties/webhook/test", method: .POST, token: party).status < 300)
        try await collector.waitFor { _ in !collector.traceparents.isEmpty }
        let fields = try #require(collector.traceparents.first).split(separator: "-").map(String.init)
        #expect(fields.count == 4)
        try await collector.waitFor { spans in spans.contains { $0.name == "webhook attempt" && $0.spanId == fields[2] } }
        let attempt = try #require(collector.spans.first { $0.name == "webhook attempt" && $0.spanId == fields[2] })
        #expect(attempt.traceId == fields[1], "the receiver's traceparent is the attempt's")
        #expect(attempt.attributes.keys.allSatisfy { !$0.hasPrefix("url.") }, "the receiver's URL is not recorded")
        #expect(!collector.spans.contains { $0.traceId == fields[1] && $0.attributes.keys.contains { $0.hasPrefix("url.") } })
        #expect(attempt.attributes["http.response.status_code"] == "204")
    }
}
