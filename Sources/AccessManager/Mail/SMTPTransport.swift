import DatabaseLink
import Foundation
import NIOCore
import NIOPosix

/// Sends each message over plain SMTP (RFC 5321) to one relay — the mail server next to the
/// deployment (a Postfix or a cloud provider's relay endpoint on the private network), which
/// takes care of TLS, DKIM and delivery to the world. One connection per message: a few
/// messages a minute do not need a pool.
package struct SMTPTransport: MailTransport {
    package let host: String
    package let port: Int
    /// The name this server gives in `EHLO`.
    package let heloName: String
    /// How long one whole exchange may take.
    package var timeout: Duration = .seconds(30)

    package init(host: String, port: Int, heloName: String) {
        self.host = host
        self.port = port
        self.heloName = heloName
    }

    package func send(_ mail: RenderedMail) async throws(MailTransportError) {
        for address in [mail.sender, mail.recipient] where !Self.isSendable(address) {
            throw .permanent("an address SMTP cannot carry without SMTPUTF8")
        }
        do {
            try await withTimeout(timeout) { try await exchange(mail) }
        } catch let error as MailTransportError {
            throw error
        } catch is TimedOut {
            throw .temporary("the relay did not finish in time")
        } catch {
            throw .temporary("cannot talk to the relay (\(type(of: error)))")
        }
    }

    /// ASCII, no angle brackets: what fits in `<…>` of a plain SMTP command.
    static func isSendable(_ address: String) -> Bool {
        address.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 32 && $0 != "<" && $0 != ">" }
    }

    private func exchange(_ mail: RenderedMail) async throws {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(10))
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        try await channel.executeThenClose { inbound, outbound in
            var replies = SMTPReplyReader(inbound.makeAsyncIterator())
            /// Sends `line` (the greeting has none) and expects one of `codes`; `step` names it in errors.
            func command(_ step: String, _ line: String?, expecting codes: Set<Int>) async throws {
                if let line { try await outbound.write(ByteBuffer(string: line + "\r\n")) }
                let reply = try await replies.next()
                guard codes.contains(reply.code) else {
                    let summary = "\(step) answered \(reply.code)"
                    throw reply.code >= 500 ? MailTransportError.permanent(summary) : MailTransportError.temporary(summary)
                }
            }
            try await command("greeting", nil, expecting: [220])
            try await command("EHLO", "EHLO \(heloName)", expecting: [250])
            try await command("MAIL FROM", "MAIL FROM:<\(mail.sender)>", expecting: [250])
            try await command("RCPT TO", "RCPT TO:<\(mail.recipient)>", expecting: [250, 251])
            try await command("DATA", "DATA", expecting: [354])
            try await command("DATA", Self.dotStuffed(mail.text) + ".", expecting: [250])
            try? await command("QUIT", "QUIT", expecting: [221])
        }
    }

    /// The message as `DATA` carries it: a line that starts with a dot gets another (RFC 5321 §4.5.2).
    static func dotStuffed(_ text: String) -> String {
        text.split(separator: "\r\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix(".") ? "." + $0 : String($0) }
            .joined(separator: "\r\n")
    }
}

/// A relay's reply: the code of its last line (multi-line replies are `250-…` lines ending with `250 …`).
struct SMTPReply {
    var code: Int
}

/// Reads replies line by line from the connection; a line longer than 4 KiB or a reply without
/// a code is a protocol error, not something to wait on.
struct SMTPReplyReader {
    private var iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    private var pending = ByteBuffer()

    init(_ iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator) {
        self.iterator = iterator
    }

    mutating func next() async throws -> SMTPReply {
        while true {
            let line = try await nextLine()
            let bytes = Array(line.utf8)
            guard bytes.count >= 3, bytes[0..<3].allSatisfy({ (48...57).contains($0) }), let code = Int(String(line.prefix(3))) else {
                throw MailTransportError.temporary("the relay's reply has no code")
            }
            if bytes.count == 3 || bytes[3] != UInt8(ascii: "-") { return SMTPReply(code: code) }
        }
    }

    private mutating func nextLine() async throws -> String {
        while true {
            if let end = pending.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
                let length = end - pending.readerIndex
                var line = pending.readString(length: length) ?? ""
                pending.moveReaderIndex(forwardBy: 1)
                if line.hasSuffix("\r") { line.removeLast() }
                return line
            }
            guard pending.readableBytes < 4096 else { throw MailTransportError.temporary("the relay's reply line is too long") }
            guard var chunk = try await iterator.next() else { throw MailTransportError.temporary("the relay closed the connection") }
            pending.writeBuffer(&chunk)
        }
    }
}
