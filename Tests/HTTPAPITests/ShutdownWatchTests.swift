import HTTPAPI
import Logging
import ServiceLifecycle
import Synchronization
import Testing

@Suite("A slow shutdown names the services it still waits for")
struct ShutdownWatchTests {
    /// Returns at once when asked to stop.
    struct Prompt: Service {
        func run() async {
            try? await gracefulShutdown()
        }
    }

    /// Takes `hold` to stop once asked (its last requests, say).
    struct Lingering: Service {
        let hold: Duration

        func run() async {
            try? await gracefulShutdown()
            try? await Task.sleep(for: hold)
        }
    }

    @Test(.timeLimit(.minutes(1))) func theWatchNamesWhatStillRunsUntilNothingDoes() async throws {
        let notices = Notices()
        let logger = Logger(label: "shutdown-watch") { _ in NoticeRecorder(notices: notices) }
        let roster = ServiceRoster()
        let group = ServiceGroup(
            configuration: .init(
                services: [
                    roster.watching(Prompt()), roster.watching(Lingering(hold: .milliseconds(1_500))),
                    ShutdownWatch(roster: roster, interval: .milliseconds(300), logger: logger),
                ], logger: Logger(label: "group") { _ in SwiftLogNoOpLogHandler() }))
        let running = Task { try await group.run() }
        while roster.stillRunning.count < 2 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(roster.stillRunning == ["Lingering", "Prompt"])
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(roster.stillRunning.isEmpty)
        // The group stops the services in reverse order: Prompt waits for Lingering.
        let said = notices.services
        #expect(said.count >= 2, "\(said)")
        #expect(said.first == "Lingering, Prompt", "\(said)")
        try await Task.sleep(for: .milliseconds(900))
        #expect(notices.services.count == said.count, "no word once every service has stopped: \(notices.services)")
    }
}

/// The `services` metadata of every notice.
private final class Notices: Sendable {
    private let state = Mutex<[String]>([])
    var services: [String] { state.withLock { $0 } }
    func record(_ services: String) { state.withLock { $0.append(services) } }
}

private struct NoticeRecorder: LogHandler {
    let notices: Notices
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(
        level: Logger.Level, message: Logger.Message, metadata explicit: Logger.Metadata?, source: String, file: String, function: String,
        line: UInt
    ) {
        if level == .notice, let services = explicit?["services"] { notices.record("\(services)") }
    }
}
