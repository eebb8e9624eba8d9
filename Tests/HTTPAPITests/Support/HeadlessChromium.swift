import AsyncHTTPClient
import DatabaseTestSupport
import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import NIOHTTP1

/// Headless Chromium (Debian's `chromium`) driven over the Chrome DevTools Protocol: a real
/// browser for the page tests. Launched with its own throwaway profile; killed by `stop()`.
final class HeadlessChromium: Sendable {
    let process: Process
    let profile: URL
    let port: Int

    static var executable: String? {
        ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    init() async throws {
        guard let executable = Self.executable else { throw BrowserError("no chromium: install the Debian package (make test does)") }
        profile = FileManager.default.temporaryDirectory.appendingPathComponent("chromium-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--remote-debugging-port=0", "--remote-allow-origins=*",
            "--user-data-dir=\(profile.path)", "--window-size=1000,800", "about:blank",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Chromium writes the port it chose to DevToolsActivePort in the profile.
        let deadline = ContinuousClock.now + .seconds(30)
        var found: Int?
        while found == nil {
            if let text = try? String(contentsOf: profile.appendingPathComponent("DevToolsActivePort"), encoding: .utf8),
               let first = text.split(separator: "\n").first, let port = Int(first) {
                found = port
            } else {
                guard ContinuousClock.now < deadline, process.isRunning else { throw BrowserError("chromium did not open its DevTools port") }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        port = found!
    }

    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: profile)
    }

    /// Opens `url` in a new tab and runs `body` with a DevTools session on it.
    func withPage(_ url: String, _ body: @escaping @Sendable (DevToolsSession) async throws -> Void) async throws {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/json/new?\(url)")
        request.method = .PUT
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let data = try await response.body.collect(upTo: 1 << 20)
        guard let target = try JSONSerialization.jsonObject(with: Data(data.readableBytesView)) as? [String: Any],
              let socket = target["webSocketDebuggerUrl"] as? String else { throw BrowserError("no page target") }
        _ = try await WebSocketClient.connect(url: socket, configuration: .init(maxFrameSize: 1 << 24), logger: TestPostgres.logger) { inbound, outbound, _ in
            let session = DevToolsSession(inbound: inbound.messages(maxSize: 1 << 24).makeAsyncIterator(), outbound: outbound)
            try await body(session)
        }
    }

    struct BrowserError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}

/// One DevTools connection: commands answered in order (the test sends one at a time).
final class DevToolsSession: @unchecked Sendable {
    // Used by one task at a time (the test's body, sequentially): the iterator is not shared.
    private var inbound: WebSocketInboundMessageStream.AsyncIterator
    private let outbound: WebSocketOutboundWriter
    private var nextId = 0

    init(inbound: WebSocketInboundMessageStream.AsyncIterator, outbound: WebSocketOutboundWriter) {
        self.inbound = inbound
        self.outbound = outbound
    }

    /// Sends a command and returns its `result`.
    func call(_ method: String, _ params: [String: Any] = [:]) async throws -> [String: Any] {
        nextId += 1
        let id = nextId
        let command = try JSONSerialization.data(withJSONObject: ["id": id, "method": method, "params": params])
        try await outbound.write(.text(String(decoding: command, as: UTF8.self)))
        while let message = try await inbound.next() {
            guard case .text(let text) = message,
                  let json = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], json["id"] as? Int == id else { continue }
            if let error = json["error"] { throw HeadlessChromium.BrowserError("\(method): \(error)") }
            return json["result"] as? [String: Any] ?? [:]
        }
        throw HeadlessChromium.BrowserError("the page closed")
    }

    /// Evaluates a JavaScript expression in the page and returns its value (JSON-compatible).
    func evaluate(_ expression: String) async throws -> Any? {
        let result = try await call("Runtime.evaluate", ["expression": expression, "returnByValue": true, "awaitPromise": true])
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Polls `expression` until `condition` holds for its value.
    func wait(for expression: String, timeout: Duration = .seconds(20), until condition: (Any?) -> Bool) async throws -> Any? {
        let deadline = ContinuousClock.now + timeout
        while true {
            // While a page is being replaced there is no context to evaluate in: try again.
            let value = try? await evaluate(expression)
            if condition(value) { return value }
            guard ContinuousClock.now < deadline else { throw HeadlessChromium.BrowserError("timed out waiting for \(expression); last value \(String(describing: value))") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}
