import Data4HelpCore
import DatabaseLink
import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Tracing

/// Settings of emergency dispatch.
package struct SOSDispatchSettings: Sendable {
    /// The dispatch centre must accept within this; the lease of an attempt is a little longer.
    package var timeout: Duration = .seconds(2)
    /// Waits after the 1st, 2nd … failed attempt (±10 % jitter); the last repeats until the
    /// centre accepts — an emergency call is never given up.
    package var backoff: [Duration] = [.milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(5)]
    /// Incidents claimed per round trip.
    package var batch = 16

    package init() {}

    var lease: Duration { timeout + .seconds(2) }
}

/// Dispatches due incidents from every instance, exactly once as far as the dispatch centre can
/// tell: a claim locks the incident (`SKIP LOCKED`, leased), the call carries the incident id
/// as its idempotency key, and only the claim that is still current records the outcome.
///
/// Not a polling loop: it sleeps until the earliest due time it knows of (the cancel window's
/// end, a retry, a lease running out) or until PostgreSQL announces a new incident on
/// `data4help_sos` (`EventListener` bumps `signal`), whichever comes first. An instance that
/// dies mid-attempt leaves its lease to run out; another instance, or this one restarted,
/// makes the call again with the same id.
package struct SOSDispatchService: Service {
    /// Sleeps at most this long when nothing is due, in case a notification was missed.
    static let idleCheck: Duration = .seconds(30)

    let store: SOSIncidentStore
    let dispatcher: any EmergencyDispatcher
    let signal: ChangeSignal
    let schemaReady: StartupGate
    let settings: SOSDispatchSettings
    let logger: Logger

    package init(
        database: Database, dispatcher: any EmergencyDispatcher, signal: ChangeSignal, schemaReady: StartupGate,
        settings: SOSDispatchSettings = SOSDispatchSettings(), logger: Logger
    ) {
        self.store = SOSIncidentStore(database: database)
        self.dispatcher = dispatcher
        self.signal = signal
        self.schemaReady = schemaReady
        self.settings = settings
        self.logger = logger
    }

    package func run() async throws {
        await cancelWhenGracefulShutdown {
            await schemaReady.wait()
            await withDiscardingTaskGroup { group in
                while !Task.isCancelled {
                    let seen = signal.generation
                    do {
                        let claimed = try await store.claimDue(limit: settings.batch, lease: settings.lease) { try SOSDispatchedNotice($0).message }
                        for incident in claimed {
                            group.addTask { await attempt(incident) }
                        }
                        if claimed.count == settings.batch { continue }
                        let wait = try await store.nextDue().map {
                            Swift.max(Duration.zero, Swift.min(Self.idleCheck, .seconds($0.timeIntervalSinceNow)))
                        }
                        await signal.wait(after: seen, timeout: wait ?? Self.idleCheck)
                    } catch {
                        if Task.isCancelled { return }
                        logger.warning("could not claim due sos incidents", metadata: ["error.type": "\(String(reflecting: type(of: error)))"])
                        await signal.wait(after: seen, timeout: .milliseconds(500))
                    }
                }
            }
        }
    }

    /// One call for one claimed incident, its outcome recorded; wakes the loop to plan the retry.
    /// A trace span of its own (`sos dispatch`), whose context goes to the dispatch centre as
    /// `traceparent` (`TraceHeaders`).
    func attempt(_ claimed: ClaimedIncident) async {
        await withSpan("sos dispatch", ofKind: .client) { span in
            span.attributes["data4help.incident.id"] = claimed.incident.publicId.uuidString.lowercased()
            span.attributes["data4help.attempt"] = claimed.incident.dispatchAttempts
            let outcome = await call(claimed)
            if case .retry(_, let error) = outcome { span.setStatus(.init(code: .error, message: error)) }
        }
        signal.notify()
    }

    private func call(_ claimed: ClaimedIncident) async -> DispatchOutcome {
        let started = ContinuousClock.now
        let outcome: DispatchOutcome
        do {
            let receipt = try await dispatcher.dispatch(try EmergencyCall(claimed))
            outcome = .accepted(reference: receipt.reference)
            let sinceReceived = Date().timeIntervalSince(claimed.incident.receivedAt)
            Timer(label: "sos_dispatch_seconds").recordNanoseconds(Int64(sinceReceived * 1e9))
            logger.notice(
                "sos incident dispatched",
                metadata: [
                    "incident.id": "\(claimed.incident.publicId)", "attempt": "\(claimed.incident.dispatchAttempts)",
                    "call.ms": "\((ContinuousClock.now - started).wholeMilliseconds)",
                ])
        } catch let failure as DispatchFailure {
            outcome = .retry(at: Date().addingTimeInterval(backoff(after: claimed.incident.dispatchAttempts)), error: failure.reason)
            logger.warning(
                "sos dispatch attempt failed; retrying",
                metadata: [
                    "incident.id": "\(claimed.incident.publicId)", "attempt": "\(claimed.incident.dispatchAttempts)", "reason": "\(failure.reason)",
                ])
        } catch {
            outcome = .retry(
                at: Date().addingTimeInterval(backoff(after: claimed.incident.dispatchAttempts)), error: "the incident could not be read")
        }
        Counter(label: "sos_dispatch_attempts_total", dimensions: [("result", { if case .accepted = outcome { "accepted" } else { "failed" } }())])
            .increment()
        do {
            try await store.finishAttempt(claimed, outcome: outcome)
        } catch {
            // Not recorded: the lease runs out and the call is made again, with the same id.
            logger.warning("sos dispatch outcome not recorded", metadata: ["incident.id": "\(claimed.incident.publicId)"])
        }
        return outcome
    }

    /// Seconds to wait after the n-th failed attempt, with ±10 % jitter.
    func backoff(after attempt: Int) -> TimeInterval {
        let base = settings.backoff[Swift.min(Swift.max(attempt - 1, 0), settings.backoff.count - 1)]
        return base.inSeconds * Double.random(in: 0.9...1.1)
    }
}
