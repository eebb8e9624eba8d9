import AccessManager
import Data4HelpCore
import DatabaseLink
import HealthSharing
import Hummingbird
import Logging
import PostgresNIO
import RunEvents
import SOSManager

/// The one place where an error of any component becomes an HTTP problem.
enum ErrorMapping {
    static let bearerChallenge = #"Bearer realm="data4help""#
    static let loginChallenge = #"Basic realm="data4help", charset="UTF-8""#

    private static func runConflict(_ slug: String, _ title: String, _ detail: String) -> Problem {
        Problem(.conflict, slug: slug, title: title, detail: detail)
    }

    /// The problem for an error; unknown errors become a 500 that reveals nothing (and are logged by type).
    static func problem(for error: any Error, logger: Logger) -> Problem {
        switch error {
        case let problem as Problem:
            return problem
        case let error as AuthenticationError:
            return problem(for: error)
        case let error as AccountError:
            return problem(for: error)
        case let error as APIKeyError:
            switch error {
            case .notFound: return .notFound("API key")
            }
        case let error as AccessRequestError:
            switch error {
            case .notFound: return .notFound("request")
            case .duplicatePending:
                return Problem(
                    .conflict, slug: "duplicate-request", title: "Request already pending",
                    detail: "You already have a pending request for this person.")
            case .wrongState(let current):
                return Problem(
                    .conflict, slug: "request-state", title: "Request not in that state",
                    detail: "The request is \(current.rawValue); this change needs another state.")
            case .invalid(let field, let reason), .widens(let field, let reason):
                return .invalidField(field, reason)
            case .unknownOrganisation:
                return .invalidField("organisationId", "is not an organisation")
            case .notGranted(let status):
                return Problem(
                    .forbidden, slug: "grant-not-active", title: "No active grant",
                    detail: "The request is \(status.rawValue); no data can be read under it.")
            case .notCovered(let kind):
                return Problem(
                    .forbidden, slug: "grant-not-active", title: "No active grant",
                    detail: "The request is granted without \(kind); no such data can be read under it.")
            }
        case let error as WebhookError:
            switch error {
            case .invalidURL(let reason): return .invalidField("url", reason)
            case .notFound: return .notFound("webhook endpoint or delivery")
            case .stillPending:
                return Problem(
                    .conflict, slug: "delivery-pending", title: "Delivery still pending",
                    detail: "The delivery is still being attempted; redeliver it once it has been delivered or has failed.")
            }
        case let error as AggregateError:
            switch error {
            case .invalid(let field, let reason): return .invalidField(field, reason)
            case .notFound: return .notFound("aggregate query")
            case .budgetExhausted(let window, let retryAfter):
                return Problem(
                    .tooManyRequests, slug: "privacy-budget-exhausted", title: "Privacy budget exhausted",
                    detail: "This query's ε does not fit in your budget for the rolling \(window); it frees up as earlier queries leave the window.",
                    headers: [.retryAfter: String(retryAfter)])
            }
        case let error as SOSError:
            switch error {
            case .invalid(let field, let reason): return .invalidField(field, reason)
            case .incidentNotFound: return .notFound("incident")
            case .reportConflict(let detail):
                return Problem(.conflict, slug: "incident-state", title: "Incident not in that state", detail: detail + ".")
            case .replayedReport:
                return Problem(
                    .conflict, slug: "report-replayed", title: "Report already received",
                    detail: "This signature was already used; sign each report afresh.")
            }
        case let error as RunEventError:
            switch error {
            case .invalid(let field, let reason): return .invalidField(field, reason)
            case .notParticipant:
                return Problem(.forbidden, slug: "not-a-runner", title: "Not a runner of this event", detail: "Only enrolled runners send positions.")
            case .refused(.notFound): return .notFound("run event")
            case .refused(.notEnrolled): return .notFound("enrolment")
            case .refused(.cancelled): return runConflict("run-cancelled", "Event cancelled", "The event was cancelled.")
            case .refused(.started): return runConflict("run-started", "Event under way", "The event has started; it can no longer be changed.")
            case .refused(.ended): return runConflict("run-ended", "Event over", "The event has ended; it can no longer be cancelled.")
            case .refused(.deadlinePassed): return runConflict("enrolment-closed", "Enrolment closed", "The enrolment deadline has passed.")
            case .refused(.full): return runConflict("run-full", "Event full", "Every place is taken.")
            case .refused(.alreadyEnrolled): return runConflict("already-enrolled", "Already enrolled", "You are already enrolled in this event.")
            case .refused(.capacityBelowEnrolled(let count)):
                return .invalidField("maxParticipants", "must be at least \(count), the runners already enrolled")
            }
        case let error as WatchRuleError:
            switch error {
            case .ruleNotFound: return .notFound("rule")
            case .alertNotFound: return .notFound("alert")
            case .unknownTemplate: return .notFound("rule template")
            case .tooManyRules(let maximum):
                return Problem(
                    .conflict, slug: "too-many-rules", title: "Too many rules",
                    detail: "You have \(maximum) watch rules, the most there may be; delete one first.")
            }
        case let error as InsightError:
            switch error {
            case .workoutNotFound: return .notFound("workout")
            case .accountNotFound: return .notFound("account")
            case .window(let days): return .invalidField("from", "the window may cover at most \(days) days")
            }
        case let error as ShareLinkError:
            switch error {
            case .notFound: return .notFound("share link")
            case .tooMany(let maximum):
                return Problem(
                    .conflict, slug: "too-many-share-links", title: "Too many share links",
                    detail: "You have \(maximum) share links that still open, the most there may be; revoke one first.")
            }
        case let error as OfferError:
            switch error {
            case .notFound: return .notFound("offer")
            case .unknownOrganisation: return .invalidField("organisationId", "is not an organisation")
            case .alreadyOffered:
                return Problem(
                    .conflict, slug: "already-offered", title: "Already offered",
                    detail: "You have an open offer to this organisation; withdraw it first to make another.")
            case .tooMany(let maximum):
                return Problem(
                    .conflict, slug: "too-many-offers", title: "Too many offers",
                    detail: "You have \(maximum) open offers, the most there may be; withdraw one first.")
            case .wrongState(let current):
                return Problem(
                    .conflict, slug: "offer-state", title: "Offer not open",
                    detail: "The offer is \(current.rawValue); only an open offer can be answered or withdrawn.")
            }
        case let error as CareError:
            switch error {
            case .linkNotFound: return .notFound("care link")
            case .invitationNotFound: return .notFound("invitation")
            case .unknownRule: return .invalidField("rules", "must name your own watch rules")
            case .ownAddress: return .invalidField("email", "must be someone else's address")
            case .alreadyInvited:
                return Problem(
                    .conflict, slug: "already-invited", title: "Already invited",
                    detail: "This address already has an open invitation or care link from you; end it first to send another.")
            case .tooManyLinks(let maximum):
                return Problem(
                    .conflict, slug: "too-many-care-links", title: "Too many care links",
                    detail: "You have \(maximum) open invitations and carers, the most there may be; end one first.")
            }
        case let error as SummaryError:
            switch error {
            case .notAQuantity(let type): return .invalidField("type", "must be a quantity type; \(type.rawValue) has no summary")
            case .windowTooLong(let days): return .invalidField("from", "the window may cover at most \(days) days")
            }
        case let error as HTTPError:
            return problem(for: error.status, detail: error.body)
        case let error as any HTTPResponseError:
            // Hummingbird's own errors, such as NIOTooManyBytesError for an oversized body.
            return problem(for: error.status, detail: nil)
        case is CancellationError:
            // The client went away (or the server is shutting down): nobody reads this answer.
            logger.debug("request cancelled")
            return Problem(.serviceUnavailable, slug: "cancelled", title: "Cancelled", detail: "The request was cancelled before it finished.")
        case let error as PSQLError where error.serverInfo?[.sqlState]?.hasPrefix("22") == true:
            // A data exception: a value PostgreSQL cannot take got past validation. The caller
            // gets a 422 rather than a 500; the log line marks the validation gap to close.
            logger.warning("database refused a value", metadata: ["error.sqlstate": "\(error.serverInfo?[.sqlState] ?? "")"])
            return Problem(
                .unprocessableContent, slug: "invalid-value", title: "Invalid value",
                detail: "A value in the request cannot be stored (for example, text with a NUL character)."
            )
        case let error as PSQLError where error.serverInfo?[.sqlState].map(isTransient) == true:
            // The server is shutting down or starting up (a restart, a failover), out of
            // connections, or chose this transaction as a deadlock or serialisation victim: nothing
            // was committed, and the same request will succeed shortly.
            logger.warning("database busy or restarting", metadata: ["error.sqlstate": "\(error.serverInfo?[.sqlState] ?? "")"])
            return Problem(
                .serviceUnavailable, slug: "database-unavailable", title: "Service unavailable",
                detail: "The database is restarting or busy right now; retry shortly.", headers: [.retryAfter: "2"]
            )
        case is ConnectionLost:
            // The connection closed under a statement (PostgreSQL restarting): nothing after the
            // last commit happened, and a new connection will do.
            logger.warning("database connection lost")
            return Problem(
                .serviceUnavailable, slug: "database-unavailable", title: "Service unavailable",
                detail: "The database is restarting or busy right now; retry shortly.", headers: [.retryAfter: "2"]
            )
        case let error as PSQLError where error.serverInfo == nil:
            // No server answer at all: the pool could not reach PostgreSQL.
            logger.error("database unavailable", metadata: ["error.code": "\(error.code)"])
            return Problem(
                .serviceUnavailable, slug: "database-unavailable", title: "Service unavailable",
                detail: "The database is not reachable right now; retry shortly.", headers: [.retryAfter: "2"]
            )
        default:
            var metadata: Logger.Metadata = ["error.type": "\(String(reflecting: type(of: error)))"]
            if let psql = error as? PSQLError, let state = psql.serverInfo?[.sqlState] {
                metadata["error.sqlstate"] = "\(state)"
            }
            logger.error("unhandled error", metadata: metadata)
            return Problem(
                .internalServerError, slug: "internal-error", title: "Internal server error",
                detail: "Something went wrong on our side; the request had no effect. Quote the request id when reporting it."
            )
        }
    }

    /// SQLSTATEs after which a retry succeeds: operator intervention (57P01 admin shutdown, 57P02
    /// crash shutdown, 57P03 cannot connect now), connection exceptions (08…), too many
    /// connections (53300), serialisation failure (40001) and deadlock (40P01).
    private static func isTransient(_ sqlState: String) -> Bool {
        sqlState.hasPrefix("57P") || sqlState.hasPrefix("08") || ["53300", "40001", "40P01"].contains(sqlState)
    }

    /// A 405 listing the methods the resource does accept.
    static func methodNotAllowed(_ allowed: [HTTPRequest.Method]) -> Problem {
        let list = allowed.map(\.rawValue).joined(separator: ", ")
        return Problem(
            .methodNotAllowed, slug: "method-not-allowed", title: "Method not allowed",
            detail: "This resource accepts \(list).", headers: [.allow: list]
        )
    }

    private static func problem(for error: AuthenticationError) -> Problem {
        switch error {
        case .missingCredentials:
            Problem(
                .unauthorized, slug: "unauthenticated", title: "Authentication required",
                detail: "Send 'Authorization: Bearer <token or API key>'.",
                headers: [.wwwAuthenticate: bearerChallenge]
            )
        case .invalidToken:
            Problem(
                .unauthorized, slug: "invalid-token", title: "Invalid credentials",
                detail: "The bearer token or API key is unknown, expired or revoked.",
                headers: [.wwwAuthenticate: bearerChallenge + #", error="invalid_token""#]
            )
        case .missingLoginCredentials:
            Problem(
                .unauthorized, slug: "login-credentials-missing", title: "Credentials required",
                detail: "Send { \"email\", \"password\" } as JSON, or HTTP Basic credentials.",
                headers: [.wwwAuthenticate: loginChallenge]
            )
        case .throttled(let seconds):
            Problem(
                .tooManyRequests, slug: "login-throttled", title: "Too many failed sign-ins",
                detail: "Too many failed sign-ins for this account or from this address; try again in \(seconds) seconds.",
                headers: [.retryAfter: String(seconds)]
            )
        case .invalidLogin:
            Problem(
                .unauthorized, slug: "invalid-login", title: "Login failed",
                detail: "The email address or the password is wrong.",
                headers: [.wwwAuthenticate: loginChallenge]
            )
        case .wrongSurface:
            Problem(
                .forbidden, slug: "wrong-api-surface", title: "Wrong API surface",
                detail: "This credential belongs to the other API: individuals use /api/users, third parties /api/thirdparties."
            )
        case .loginSessionRequired:
            Problem(
                .forbidden, slug: "login-session-required", title: "Login session required",
                detail: "API keys are for the data API; managing keys, webhooks and sessions needs a login token (POST /api/thirdparties/login)."
            )
        case .notALoginToken:
            Problem(
                .badRequest, slug: "not-a-login-token", title: "Not a login token",
                detail: "Logout ends the login token in use; this request used an API key. Revoke keys with DELETE /api/thirdparties/keys/{keyId}."
            )
        }
    }

    private static func problem(for error: AccountError) -> Problem {
        switch error {
        case .alreadyRegistered:
            Problem(
                .conflict, slug: "already-registered", title: "Already registered",
                detail: "An account with this email address or fiscal code was created after this registration was made."
            )
        case .confirmationUnknown:
            .invalidField("token", "is unknown, already used or expired: register again for a new link")
        case .emailInUse:
            Problem(
                .conflict, slug: "email-in-use", title: "Email address in use",
                detail: "Another account uses this email address."
            )
        case .wrongCurrentPassword:
            .invalidField("currentPassword", "is not the account's current password")
        case .wrongPassword:
            .invalidField("password", "is not the account's password")
        case .notFound:
            .notFound("account")
        }
    }

    private static func problem(for status: HTTPResponse.Status, detail: String?) -> Problem {
        switch status {
        case .notFound:
            .notFound()
        case .contentTooLarge:
            .bodyTooLarge()
        case .methodNotAllowed:
            Problem(.methodNotAllowed, slug: "method-not-allowed", title: "Method not allowed", detail: "This resource does not support that method.")
        default:
            Problem(status, slug: "http-\(status.code)", title: status.reasonPhrase, detail: detail ?? status.reasonPhrase)
        }
    }
}
