import Logging
import ServiceLifecycle
import Synchronization

/// Which of the process's services are still running, by name, so that a shutdown that takes
/// long says what holds it. The service group stops services in reverse order: the HTTP server
/// first (its open requests finish), then the application's services from the last to the pool.
/// A shutdown past its bound ends in the group's fatal error; before that, `ShutdownWatch` logs
/// the names.
package final class ServiceRoster: Sendable {
    private let running = Mutex<[String: Int]>([:])  // a name → how many run (the import workers share one)

    package init() {}

    /// `service`, registered under `name` (its type's name without generic arguments when nil)
    /// while its `run()` runs.
    package func watching(_ service: any Service, as name: String? = nil) -> any Service {
        Watched(service: service, name: name ?? Self.name(of: service), roster: self)
    }

    /// The names of the services still running, sorted; a name that runs more than once is
    /// followed by its count ("ImportWorker ×2").
    package var stillRunning: [String] {
        running.withLock { running in
            running.keys.sorted().map { name in
                let count = running[name] ?? 0
                return count > 1 ? "\(name) ×\(count)" : name
            }
        }
    }

    fileprivate func began(_ name: String) {
        running.withLock { $0[name, default: 0] += 1 }
    }

    fileprivate func ended(_ name: String) {
        running.withLock { running in
            let left = (running[name] ?? 1) - 1
            running[name] = left > 0 ? left : nil
        }
    }

    private static func name(of service: any Service) -> String {
        if let watched = service as? Watched { return watched.name }  // watched twice: by its own name
        let full = String(describing: type(of: service))
        return full.firstIndex(of: "<").map { String(full[..<$0]) } ?? full
    }
}

/// A service that reports its run to a roster. The group's log names it by its inner service.
private struct Watched: Service, CustomStringConvertible {
    let service: any Service
    let name: String
    let roster: ServiceRoster

    var description: String { name }

    func run() async throws {
        roster.began(name)
        defer { roster.ended(name) }
        try await service.run()
    }
}

/// Logs, while a graceful shutdown lasts longer than `interval`, which services still run — a
/// notice every `interval` until none does (a slow shutdown is not yet a fault: its requests
/// may still be finishing). It starts watching when the group's graceful
/// shutdown reaches it and returns at once, holding nothing up: run it as the group's last
/// service, whose graceful shutdown the group triggers first.
package struct ShutdownWatch: Service {
    let roster: ServiceRoster
    let interval: Duration
    let logger: Logger

    package init(roster: ServiceRoster, interval: Duration = .seconds(5), logger: Logger) {
        self.roster = roster
        self.interval = interval
        self.logger = logger
    }

    package func run() async {
        // Returns at graceful shutdown; throws when the group is cancelled instead: nothing to watch then.
        guard (try? await gracefulShutdown()) != nil else { return }
        // Unstructured and detached: the group does not wait for it, and the process's end ends it.
        Task.detached { [roster, interval, logger] in
            let start = ContinuousClock.now
            while true {
                try? await Task.sleep(for: interval)
                let still = roster.stillRunning
                if still.isEmpty { return }
                logger.notice(
                    "shutdown is waiting for services that still run",
                    metadata: [
                        "shutdown.seconds": "\((ContinuousClock.now - start).components.seconds)",
                        "services": "\(still.joined(separator: ", "))",
                    ])
            }
        }
    }
}
