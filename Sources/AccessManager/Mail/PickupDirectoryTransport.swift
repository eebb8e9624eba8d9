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
