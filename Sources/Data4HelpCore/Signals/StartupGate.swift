import Synchronization

/// Opens once: background services that need the current schema wait on it until the start-up
/// migrations have run (the server opens it in `beforeServerStarts`).
package final class StartupGate: Sendable {
    private let signal = ChangeSignal()

    package init() {}

    package var isOpen: Bool { signal.generation > 0 }

    package func open() {
        if !isOpen { signal.notify() }
    }

    /// Returns once the gate is open (or the task is cancelled).
    package func wait() async {
        while !isOpen, !Task.isCancelled {
            await signal.wait(after: 0, timeout: .seconds(3600))
        }
    }
}
