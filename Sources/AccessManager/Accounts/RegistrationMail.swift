import DatabaseLink
import Foundation

/// The messages registration sends. Plain ASCII text, no personal data beyond the address it
/// goes to: a mailbox may be read by others, and a message is kept by every relay on its way.
enum RegistrationMail {
    static func confirm(_ recipient: String, link: String, validFor hours: Int) -> OutboundMessage {
        OutboundMessage(
            recipient: recipient, subject: "Confirm your Data4Help account",
            body: """
                Someone, hopefully you, asked for a Data4Help account with this e-mail address.

                To create the account, open this link and confirm:

                \(link)

                The link works once, for \(hours) hours. If you did not ask for an account, ignore this
                message: nothing is created without the link.
                """)
    }

    static func alreadyRegistered(_ recipient: String, signIn: String) -> OutboundMessage {
        OutboundMessage(
            recipient: recipient, subject: "Your Data4Help account",
            body: """
                Someone, hopefully you, asked for a new Data4Help account with this e-mail address,
                which already has one. No second account was created.

                To use your account, sign in: \(signIn)

                If it was not you, nothing changed; you may want to make sure your password is one
                you use nowhere else.
                """)
    }

    static func fiscalCodeHeld(_ recipient: String) -> OutboundMessage {
        OutboundMessage(
            recipient: recipient, subject: "Your Data4Help registration",
            body: """
                Someone, hopefully you, asked for a Data4Help account with this e-mail address.

                We could not create it: the fiscal code given already belongs to an account. If the
                fiscal code is yours, write to our support team from this address with a copy of an
                identity document; we will check it and sort it out. No account was created.
                """)
    }

    static func fiscalCodeAttempt(_ recipient: String, signIn: String) -> OutboundMessage {
        OutboundMessage(
            recipient: recipient, subject: "Someone tried to register with your fiscal code",
            body: """
                Someone asked for a new Data4Help account with the fiscal code of your account, from
                another e-mail address. No account was created, and nothing about your account was
                shown to them.

                You need not do anything. If you know nothing of it and it happens again, write to our
                support team. Your account: \(signIn)
                """)
    }
}
