import AsyncHTTPClient
import DatabaseTestSupport
import ExternalPrograms
import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import NIOHTTP1

/// Headless Chromium (Debian's `chromium`) driven over the Chrome DevTools Protocol: a real
/// browser for the page tests. Launched with its own throwaway profile; killed by `stop()`.
final class HeadlessChromium: Sendable {
    let process: ChildProcess
    let profile: URL
    let port: Int

    static var executable: String? {
        ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    init() async throws {
        guard let executable = Self.executable else { throw BrowserError("no chromium: install the Debian package (make test does)") }
        profile = FileManager.default.temporaryDirectory.appendingPathComponent("chromium-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        process = try await ChildProcess.start(
            URL(fileURLWithPath: executable),
            [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--remote-debugging-port=0",
                "--remote-allow-origins=*",
                "--user-data-dir=\(profile.path)", "--window-size=1000,800", "about:blank",
            ])
        // Chromium writes the port it chose to DevToolsActivePort in the profile once it listens:
        // the file is the event, the loop only looks for it (a cold start under load takes seconds).
        let deadline = ContinuousClock.now + .seconds(60)
        var found: Int?
        while found == nil {
            if let text = try? String(contentsOf: profile.appendingPathComponent("DevToolsActivePort"), encoding: .utf8),
                let first = text.split(separator: "\n").first, let port = Int(first)
            {
                found = port
            } else {
                guard ContinuousClock.now < deadline, process.isRunning else { throw BrowserError("chromium did not open its DevTools port") }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        port = found!
    }

    /// SIGTERM, not waiting for the exit; the profile is removed now (a file Chromium writes
    /// while it exits may be left behind).
    func stop() {
        process.terminate()
        try? FileManager.default.removeItem(at: profile)
    }

    /// Opens a new tab, navigates it to `url` and waits until that document has loaded, then runs
    /// `body` with a DevTools session on it.
    func withPage(_ url: String, _ body: @escaping @Sendable (DevToolsSession) async throws -> Void) async throws {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/json/new?about:blank")
        request.method = .PUT
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let data = try await response.body.collect(upTo: 1 << 20)
        guard let target = try JSONSerialization.jsonObject(with: Data(data.readableBytesView)) as? [String: Any],
            let socket = target["webSocketDebuggerUrl"] as? String
        else { throw BrowserError("no page target") }
        _ = try await WebSocketClient.connect(url: socket, configuration: .init(maxFrameSize: 1 << 24), logger: TestPostgres.logger) {
            inbound, outbound, _ in
            // One task reads every message into a stream; a ticker adds an empty message every
            // 250 ms so that a wait for an event that never comes ends at its deadline.
            let (messages, feed) = AsyncStream.makeStream(of: String.self)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await message in inbound.messages(maxSize: 1 << 24) {
                        if case .text(let text) = message { feed.yield(text) }
                    }
                    feed.finish()
                }
                group.addTask {
                    while !Task.isCancelled {
                        try await Task.sleep(for: .milliseconds(250))
                        feed.yield("")
                    }
                }
                let session = DevToolsSession(messages: messages.makeAsyncIterator(), outbound: outbound)
                try await session.start()
                try await session.navigate(to: url)
                try await body(session)
                group.cancelAll()
            }
        }
    }

    struct BrowserError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}

/// One DevTools connection to a tab. It follows the tab's main frame from the protocol's own
/// events — which document is committed (`Page.frameNavigated`), which has loaded
/// (`Page.lifecycleEvent` "load"), which JavaScript context belongs to it
/// (`Runtime.executionContextCreated`) — so a test waits for the navigation it started and
/// evaluates in the document it expects: an evaluation in a document that has gone away fails
/// with the page's URL instead of answering nothing.
final class DevToolsSession: @unchecked Sendable {
    // Used by one task at a time (the test's body, sequentially): the iterator and the state
    // below are touched only from that task.
    private var messages: AsyncStream<String>.Iterator
    private let outbound: WebSocketOutboundWriter
    private var nextId = 0
    private var mainFrame = ""
    /// The main frame's committed document: its loader and URL.
    private(set) var loaderId = ""
    private(set) var url = ""
    private var loadedLoaders: Set<String> = []
    /// The main frame's default JavaScript context, nil between documents.
    private var contextId: Int?

    init(messages: AsyncStream<String>.Iterator, outbound: WebSocketOutboundWriter) {
        self.messages = messages
        self.outbound = outbound
    }

    /// Turns on the events the session follows and reads the tab's current document.
    func start() async throws {
        _ = try await call("Page.enable")
        _ = try await call("Page.setLifecycleEventsEnabled", ["enabled": true])
        let tree = try await call("Page.getFrameTree")
        guard let frame = (tree["frameTree"] as? [String: Any])?["frame"] as? [String: Any], let id = frame["id"] as? String else {
            throw HeadlessChromium.BrowserError("Page.getFrameTree: no main frame")
        }
        mainFrame = id
        loaderId = frame["loaderId"] as? String ?? ""
        url = frame["url"] as? String ?? ""
        // Runtime.enable reports the contexts that exist already, the main frame's among them.
        _ = try await call("Runtime.enable")
    }

    /// Sends a command and returns its `result`; events that arrive meanwhile update the session.
    func call(_ method: String, _ params: [String: Any] = [:], timeout: Duration = .seconds(30)) async throws -> [String: Any] {
        nextId += 1
        let id = nextId
        let command = try JSONSerialization.data(withJSONObject: ["id": id, "method": method, "params": params])
        try await outbound.write(.text(String(decoding: command, as: UTF8.self)))
        let deadline = ContinuousClock.now + timeout
        while true {
            let json = try await nextMessage(until: deadline, waitingFor: method)
            guard json["id"] as? Int == id else { continue }
            if let error = json["error"] { throw HeadlessChromium.BrowserError("\(method) at \(url): \(error)") }
            return json["result"] as? [String: Any] ?? [:]
        }
    }

    /// How long a navigation may wait for its document: as long as the test server may take to
    /// answer (`TestServer`'s 120 s request timeout) — a form post that verifies a password with
    /// Argon2id took over 30 s with the whole suite, a clean-clone `make test` and two release
    /// builds on two cores. The wait ends as soon as the document has loaded.
    static let documentTimeout: Duration = .seconds(120)

    /// Navigates the tab to `target` (absolute, or relative to the current document) and waits
    /// until the new document has loaded and has its JavaScript context.
    func navigate(to target: String, timeout: Duration = DevToolsSession.documentTimeout) async throws {
        guard let absolute = URL(string: target, relativeTo: URL(string: url))?.absoluteString else {
            throw HeadlessChromium.BrowserError("not a URL: \(target)")
        }
        // Chromium answers `Page.navigate` once the response has begun: as long as the server
        // takes (a clean-clone `make test` timed out the 30 s default on `/me/workouts`).
        let result = try await call("Page.navigate", ["url": absolute], timeout: timeout)
        if let error = result["errorText"] as? String { throw HeadlessChromium.BrowserError("navigating to \(absolute): \(error)") }
        guard let loader = result["loaderId"] as? String else { return }  // same-document navigation: nothing to load
        try await waitForEvents(timeout: timeout, "the document of \(absolute) to load") { $0.loaderId == loader && $0.isLoaded }
    }

    /// Runs `action`, which makes the page navigate (a form's submission, a link's click), and
    /// waits until a document other than the current one has loaded.
    func navigating(_ description: String, timeout: Duration = DevToolsSession.documentTimeout, _ action: () async throws -> Void) async throws {
        let before = loaderId
        try await action()
        try await waitForEvents(timeout: timeout, "a new document after \(description)") { $0.loaderId != before && $0.isLoaded }
    }

    /// Evaluates a JavaScript expression in the current document and returns its value
    /// (JSON-compatible). Throws, naming the page, if the script throws, the document has gone
    /// away, or there is none yet.
    func evaluate(_ expression: String) async throws -> Any? {
        guard let contextId else { throw HeadlessChromium.BrowserError("no document to evaluate in at \(url) (between two documents)") }
        let result = try await call(
            "Runtime.evaluate", ["expression": expression, "returnByValue": true, "awaitPromise": true, "contextId": contextId])
        if let exception = result["exceptionDetails"] as? [String: Any] {
            let text = ((exception["exception"] as? [String: Any])?["description"] as? String) ?? exception["text"] as? String ?? "\(exception)"
            throw HeadlessChromium.BrowserError("script threw at \(url): \(text)\n\(expression)")
        }
        return (result["result"] as? [String: Any])?["value"]
    }

    /// Evaluates an expression that must answer a value of type `T`.
    func evaluate<T>(_ expression: String, as type: T.Type) async throws -> T {
        let value = try await evaluate(expression)
        guard let typed = value as? T else {
            throw HeadlessChromium.BrowserError("at \(url): \(T.self) expected, got \(String(describing: value)) from\n\(expression)")
        }
        return typed
    }

    /// Polls `expression` in the current document until `condition` holds for its value. A
    /// document that changes or a script that throws fails the wait at once.
    func wait(for expression: String, timeout: Duration = .seconds(20), until condition: (Any?) -> Bool) async throws -> Any? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let value = try await evaluate(expression)
            if condition(value) { return value }
            guard ContinuousClock.now < deadline else {
                throw HeadlessChromium.BrowserError("at \(url): timed out waiting for \(expression); last value \(String(describing: value))")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    // MARK: - Events

    private struct FrameState {
        let loaderId: String
        let isLoaded: Bool
    }

    /// Reads messages until the main frame's state satisfies `condition` (checked first on the
    /// state as it is: the event may have come already).
    private func waitForEvents(timeout: Duration, _ what: String, until condition: (FrameState) -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !(condition(FrameState(loaderId: loaderId, isLoaded: loadedLoaders.contains(loaderId))) && contextId != nil) {
            _ = try await nextMessage(until: deadline, waitingFor: what)
        }
    }

    /// The next message from the browser, with its events applied to the session's state.
    private func nextMessage(until deadline: ContinuousClock.Instant, waitingFor what: String) async throws -> [String: Any] {
        while true {
            guard let text = await messages.next() else { throw HeadlessChromium.BrowserError("the page closed while waiting for \(what) at \(url)") }
            if text.isEmpty {  // the ticker
                guard ContinuousClock.now < deadline else { throw HeadlessChromium.BrowserError("timed out waiting for \(what) at \(url)") }
                continue
            }
            guard let json = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { continue }
            if let method = json["method"] as? String { apply(method, json["params"] as? [String: Any] ?? [:]) }
            return json
        }
    }

    private func apply(_ method: String, _ params: [String: Any]) {
        switch method {
        case "Page.frameNavigated":
            guard let frame = params["frame"] as? [String: Any], frame["parentId"] == nil, frame["id"] as? String == mainFrame else { return }
            loaderId = frame["loaderId"] as? String ?? ""
            url = frame["url"] as? String ?? url
        case "Page.lifecycleEvent":
            guard params["frameId"] as? String == mainFrame, params["name"] as? String == "load", let loader = params["loaderId"] as? String else {
                return
            }
            loadedLoaders.insert(loader)
        case "Runtime.executionContextCreated":
            guard let context = params["context"] as? [String: Any], let aux = context["auxData"] as? [String: Any],
                aux["frameId"] as? String == mainFrame, aux["isDefault"] as? Bool == true, let id = context["id"] as? Int
            else { return }
            contextId = id
        case "Runtime.executionContextDestroyed":
            if params["executionContextId"] as? Int == contextId { contextId = nil }
        case "Runtime.executionContextsCleared":
            contextId = nil
        default:
            return
        }
    }
}
