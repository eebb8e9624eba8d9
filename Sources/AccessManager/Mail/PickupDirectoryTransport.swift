import Foundation

/// Writes each message as an `.eml` file into a directory instead of sending it: what
/// `make run` uses when no relay is configured, so a developer opens the confirmation link from
/// `.data/mail/`. Files appear whole (written under a temporary name, then renamed).
package struct PickupDirectoryTransport: MailTransport {
    package let directory: URL

    package init(directory: URL) {
        self.directory = directory
    }

    package func send(_ mail: RenderedMail) async throws(MailTransportError) {
        let name = String(format: "%.0f", Date().timeIntervalSince1970 * 1000) + "-" + UUID().uuidString.lowercased()
        let temporary = directory.appendingPathComponent(".\(name).tmp")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data(mail.text.utf8).write(to: temporary)
            try FileManager.default.moveItem(at: temporary, to: directory.appendingPathComponent("\(name).eml"))
        } catch {
            throw .temporary("cannot write to the pickup directory")
        }
    }
}

/// Reads a pickup directory as a mailbox: what development tools (`run-demo`, `bench`) and the
/// tests do in place of a person opening their e-mail.
package struct PickupMailbox: Sendable {
    package let directory: URL

    package init(directory: URL) {
        self.directory = directory
    }

    /// A message as it was written: its subject and whole text.
    package struct Message: Sendable {
        package let subject: String
        package let text: String

        /// The token of the confirmation link in it, if it has one.
        package var confirmationToken: String? {
            text.range(of: #"token=d4hc_[A-Za-z0-9_-]+"#, options: .regularExpression).map { String(text[$0].dropFirst("token=".count)) }
        }
    }

    /// Every message to `recipient` so far, oldest first.
    package func messages(to recipient: String) -> [Message] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(".eml") }.sorted()
        return names.compactMap { name -> Message? in
            guard let data = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path),
                let text = String(data: data, encoding: .utf8)
            else { return nil }
            let headers = (text.components(separatedBy: "\r\n\r\n").first ?? "").components(separatedBy: "\r\n")
            guard headers.contains("To: <\(recipient)>") else { return nil }
            let subject = headers.first { $0.hasPrefix("Subject: ") }.map { String($0.dropFirst(9)) } ?? ""
            return Message(subject: subject, text: text)
        }
    }

    /// Waits until `recipient` has more than `earlier` messages, and returns them all; nil after `timeout`.
    package func waitForMessages(to recipient: String, moreThan earlier: Int = 0, timeout: Duration = .seconds(30)) async throws -> [Message]? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let received = messages(to: recipient)
            if received.count > earlier { return received }
            guard ContinuousClock.now < deadline else { return nil }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The confirmation token in the first message to `recipient` after its `earlier` ones
    /// (waiting for it); nil when none comes in `timeout` or it holds no link.
    package func confirmationToken(for recipient: String, after earlier: Int = 0, timeout: Duration = .seconds(30)) async throws -> String? {
        try await waitForMessages(to: recipient, moreThan: earlier, timeout: timeout)?.dropFirst(earlier).first?.confirmationToken
    }
}
