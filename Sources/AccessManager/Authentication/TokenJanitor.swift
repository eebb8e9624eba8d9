import DatabaseLink
import Foundation
import Logging
import ServiceLifecycle

/// Deletes login tokens that expired or were revoked more than a week ago, once an hour, so that
/// `access_tokens` holds live tokens and recent history rather than every login ever made; and
/// sign-in failure windows over for a day; registrations that expired unconfirmed (they hold
/// personal data nobody confirmed) and records of outbound mail older than a month.
package struct TokenJanitor: Service {
    let tokens: AccessTokenStore
    let loginFailures: LoginFailureStore
    let registrations: RegistrationStore
    let mail: OutboundMailStore
    let logger: Logger
    /// How long ended tokens stay listed in the table (for audit and support questions).
    package var retention: Duration = .seconds(7 * 24 * 3600)
    package var interval: Duration = .seconds(3600)

    package init(database: Database, logger: Logger) {
        self.tokens = AccessTokenStore(database: database)
        self.loginFailures = LoginFailureStore(database: database)
        self.registrations = RegistrationStore(database: database)
        self.mail = OutboundMailStore(database: database)
        self.logger = logger
    }

    package func run() async throws {
        await repeatUntilShutdown(every: interval) { await purgeOnce() }
    }

    /// One purge; failures are logged and retried at the next interval.
    package func purgeOnce() async {
        let cutoff = Date().addingTimeInterval(-Double(retention.components.seconds))
        do {
            let removed = try await tokens.purge(endedBefore: cutoff)
            if removed > 0 { logger.info("purged ended login tokens", metadata: ["tokens.removed": "\(removed)"]) }
            _ = try await loginFailures.purge(startedBefore: Date().addingTimeInterval(-86_400))
            _ = try await registrations.purgeExpired()
            _ = try await mail.purge(createdBefore: Date().addingTimeInterval(-30 * 86_400))
        } catch {
            logger.warning("token purge failed; will retry", metadata: ["error.type": "\(type(of: error))"])
        }
    }
}
