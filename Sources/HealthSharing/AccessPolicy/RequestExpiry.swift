import Data4HelpCore
import DatabaseLink
import Logging
import ServiceLifecycle

/// Records the expiry of requests and grants whose time is up, every `interval`: a history entry
/// and an event (`request.expired`, `grant.expired`) each. Reads treat them as expired from the
/// first second anyway (the effective status is computed); this makes the change visible to the
/// party's webhooks and stream.
package struct RequestExpiry: Service {
    let requests: AccessRequestStore
    let interval: Duration
    let schemaReady: StartupGate
    let logger: Logger

    package init(database: Database, interval: Duration, schemaReady: StartupGate, logger: Logger) {
        self.schemaReady = schemaReady
        self.requests = AccessRequestStore(database: database)
        self.interval = interval
        self.logger = logger
    }

    package func run() async throws {
        await repeatUntilShutdown(every: interval) {
            if schemaReady.isOpen { await sweepOnce() }
        }
    }

    package func sweepOnce() async {
        do {
            while try await requests.expireLapsed(limit: 1_000) == 1_000 {}
        } catch {
            logger.warning("request expiry sweep failed; will retry", metadata: ["error.type": "\(String(reflecting: type(of: error)))"])
        }
    }
}
