import AccessManager
import Foundation

/// The test process's mail: every server a test starts (in process or as a `data4help serve`
/// child) writes its messages as `.eml` files into this one pickup directory, and tests read
/// them as a person reads their mailbox. Addresses are unique per test, so a test sees only its own.
enum Mailbox {
    static let directory: URL = {
        let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("data4help-mail-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    static var box: PickupMailbox { PickupMailbox(directory: directory) }

    /// Every message to `recipient` so far, oldest first.
    static func messages(to recipient: String) -> [PickupMailbox.Message] {
        box.messages(to: recipient)
    }

    /// Waits (up to 30 s: the server sends at once, a loaded machine may be slow) until
    /// `recipient` has received `count` messages, and returns them.
    static func waitForMessages(to recipient: String, count: Int = 1) async throws -> [PickupMailbox.Message] {
        guard let received = try await box.waitForMessages(to: recipient, moreThan: count - 1) else {
            throw MailboxError("fewer than \(count) messages to \(recipient) after 30 s")
        }
        return received
    }

    /// The token in the confirmation link of the first message to `recipient` after the `earlier`
    /// it had already received (waiting for it).
    static func confirmationToken(for recipient: String, after earlier: Int = 0) async throws -> String {
        guard let token = try await box.confirmationToken(for: recipient, after: earlier) else {
            throw MailboxError("no confirmation link to \(recipient) after 30 s")
        }
        return token
    }

    struct MailboxError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
