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

    /// A message as received: its headers and its (7-bit) text.
    struct Message {
        let subject: String
        let text: String
    }

    /// Every message to `recipient` so far, oldest first.
    static func messages(to recipient: String) -> [Message] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(".eml") }.sorted()
        return names.compactMap { name -> Message? in
            guard let data = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path),
                  let text = String(data: data, encoding: .utf8) else { return nil }
            let headers = text.components(separatedBy: "\r\n\r\n").first ?? ""
            let lines = headers.components(separatedBy: "\r\n")
            guard lines.contains("To: <\(recipient)>") else { return nil }
            let subject = lines.first { $0.hasPrefix("Subject: ") }.map { String($0.dropFirst(9)) } ?? ""
            return Message(subject: subject, text: text)
        }
    }

    /// Waits (up to 30 s: the server sends at once, a loaded machine may be slow) until `recipient`
    /// has received `count` messages, and returns them.
    static func waitForMessages(to recipient: String, count: Int = 1) async throws -> [Message] {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            let received = messages(to: recipient)
            if received.count >= count { return received }
            guard ContinuousClock.now < deadline else { throw MailboxError.noMessage(recipient: recipient, received: received.count) }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The token in the confirmation link of the first message to `recipient` after the
    /// `after` it had already received (waiting for it).
    static func confirmationToken(for recipient: String, after earlier: Int = 0) async throws -> String {
        let confirmations = try await waitForMessages(to: recipient, count: earlier + 1).dropFirst(earlier)
            .filter { $0.subject == "Confirm your Data4Help account" }
        guard let text = confirmations.first?.text, let range = text.range(of: #"token=d4hc_[A-Za-z0-9_-]+"#, options: .regularExpression) else {
            throw MailboxError.noLink(recipient: recipient)
        }
        return String(text[range].dropFirst("token=".count))
    }

    enum MailboxError: Error {
        case noMessage(recipient: String, received: Int)
        case noLink(recipient: String)
    }
}
