import Foundation

/// Hands a rendered message to whatever carries it on: an SMTP relay (`SMTPTransport`) or a
/// pickup directory a developer reads (`PickupDirectoryTransport`).
package protocol MailTransport: Sendable {
    /// Sends the message, or throws `MailTransportError` saying whether to try again.
    func send(_ mail: RenderedMail) async throws(MailTransportError)
}

/// Why a message was not handed over.
package enum MailTransportError: Error, Equatable, CustomStringConvertible {
    /// Worth another try later: the relay is unreachable, busy, or answered 4xx.
    case temporary(String)
    /// Never worth another try: the relay answered 5xx, or the address cannot be sent to.
    case permanent(String)

    package var description: String {
        switch self {
        case .temporary(let reason): "temporary: \(reason)"
        case .permanent(let reason): "permanent: \(reason)"
        }
    }
}
