import Foundation

/// A message as it goes on the wire (RFC 5322): envelope sender and recipient, and the text with
/// its headers, lines ending in CRLF. Plain text, UTF-8; a body that is not ASCII is sent in
/// base64 so that no relay has to support 8BITMIME.
package struct RenderedMail: Sendable, Equatable {
    /// `MAIL FROM` and the address in `From:`.
    package var sender: String
    /// `RCPT TO` and `To:`.
    package var recipient: String
    /// The whole message, headers and body.
    package var text: String

    /// Renders a message. `sender` and `recipient` are addresses this server validated (no
    /// whitespace or control characters), so no header can be injected through them; the
    /// subject is this server's own text.
    package init(sender: String, recipient: String, subject: String, body: String, date: Date = Date(), messageID: UUID = UUID()) {
        self.sender = sender
        self.recipient = recipient
        let domain = sender.split(separator: "@").last.map(String.init) ?? "data4help.invalid"
        let ascii = body.unicodeScalars.allSatisfy { $0.isASCII }
        var lines = [
            "From: Data4Help <\(sender)>",
            "To: <\(recipient)>",
            "Subject: \(subject)",
            "Date: \(Self.rfc5322Date(date))",
            "Message-ID: <\(messageID.uuidString.lowercased())@\(domain)>",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: \(ascii ? "7bit" : "base64")",
            "Auto-Submitted: auto-generated",
            "",
        ]
        let normalised = body.replacingOccurrences(of: "\r\n", with: "\n")
        if ascii {
            lines += normalised.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        } else {
            let encoded = Data(normalised.replacingOccurrences(of: "\n", with: "\r\n").utf8).base64EncodedString()
            var index = encoded.startIndex
            while index < encoded.endIndex {
                let end = encoded.index(index, offsetBy: 76, limitedBy: encoded.endIndex) ?? encoded.endIndex
                lines.append(String(encoded[index..<end]))
                index = end
            }
        }
        self.text = lines.joined(separator: "\r\n") + "\r\n"
    }

    private static func rfc5322Date(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        return formatter.string(from: date)
    }
}
