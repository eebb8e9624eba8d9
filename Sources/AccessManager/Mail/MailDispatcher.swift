import Data4HelpCore
import DatabaseLink
import Foundation
import Logging
import ServiceLifecycle

/// Sends the outbound-mail outbox: wakes when this instance queues a message (`queued`), and
/// looks for messages other instances queued every `pollInterval`. A message the transport
/// could not hand over is tried again on a widening schedule; after the last step, or at once
/// when the relay refuses it for good, it is given up and logged (never its address or text).
package struct MailDispatcher: Service {
    let store: OutboundMailStore
    let transport: any MailTransport
    let sender: String
    let queued: ChangeSignal
    let schemaReady: StartupGate
    let logger: Logger
    /// Waits after the 1st, 2nd, … failed attempt; a message is given up after the last.
    package var retrySchedule: [Duration] = [.seconds(60), .seconds(300), .seconds(1800), .seconds(7200), .seconds(21_600)]
    package var pollInterval: Duration = .seconds(10)

    package init(
        database: Database, transport: any MailTransport, sender: String, queued: ChangeSignal, schemaReady: StartupGate, logger: Logger
    ) {
        self.store = OutboundMailStore(database: database)
        self.transport = transport
        self.sender = sender
        self.queued = queued
        self.schemaReady = schemaReady
        self.logger = logger
    }

    package func run() async throws {
        await schemaReady.wait()
        await cancelWhenGracefulShutdown {
            await queued.repeatWhileBusy(pollInterval: pollInterval) { await sendDue() > 0 }
        }
    }

    /// Sends what is due now; returns how many messages it handled (sent or not).
    @discardableResult
    package func sendDue() async -> Int {
        let leased: [LeasedMail]
        do {
            leased = try await store.lease(limit: 20, leaseFor: .seconds(120))
        } catch {
            logger.warning("cannot lease outbound mail; will retry", metadata: ["error.type": "\(type(of: error))"])
            return 0
        }
        for mail in leased {
            let rendered = RenderedMail(sender: sender, recipient: mail.message.recipient, subject: mail.message.subject, body: mail.message.body)
            do {
                try await transport.send(rendered)
                try await store.markSent(id: mail.id)
            } catch let failure as MailTransportError {
                await reschedule(mail, failure)
            } catch {
                logger.warning("cannot record a sent message", metadata: ["mail.id": "\(mail.id)", "error.type": "\(type(of: error))"])
            }
        }
        return leased.count
    }

    private func reschedule(_ mail: LeasedMail, _ failure: MailTransportError) async {
        let step = Int(mail.attempts)
        var retryAt: Date?
        if case .temporary = failure, step < retrySchedule.count {
            retryAt = Date().addingTimeInterval(Double(retrySchedule[step].components.seconds))
        }
        if retryAt == nil {
            logger.error("outbound mail given up", metadata: ["mail.id": "\(mail.id)", "mail.failure": "\(failure)"])
        } else {
            logger.warning("outbound mail not sent; will retry", metadata: ["mail.id": "\(mail.id)", "mail.failure": "\(failure)"])
        }
        do {
            try await store.markFailed(id: mail.id, retryAt: retryAt, reason: failure.description)
        } catch {
            logger.warning("cannot reschedule outbound mail", metadata: ["mail.id": "\(mail.id)", "error.type": "\(type(of: error))"])
        }
    }
}
