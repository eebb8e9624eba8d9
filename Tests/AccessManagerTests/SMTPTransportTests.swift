import AccessManager
import ExternalPrograms
import Foundation
import Testing

/// `SMTPTransport` against an SMTP server we did not write (CPython's `smtpd`, with the standard
/// library's e-mail parser reading what arrived): envelope, headers, dot-stuffing and a non-ASCII
/// body must survive the trip; a refusal is permanent, an unreachable relay temporary.
@Suite("SMTP transport against CPython's smtpd", .serialized)
struct SMTPTransportTests {
    /// A running `smtp-relay.py`: its port and the directory its messages land in.
    final class Relay {
        let process: ChildProcess
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("smtp-relay-\(UUID().uuidString.prefix(8))")
        let port: Int

        /// Starts the relay and reads its port from the first line it prints (to a file: the
        /// file is the event, the loop only looks for it).
        init() async throws {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/smtp-relay.py")
            let printed = directory.appendingPathComponent("port.txt")
            process = try await ChildProcess.start(
                URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path, directory.path], output: printed,
                error: directory.appendingPathComponent("stderr.txt"))
            let deadline = ContinuousClock.now + .seconds(30)
            var line = ""
            while !line.hasSuffix("\n"), process.isRunning, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                line = (try? String(contentsOf: printed, encoding: .utf8)) ?? ""
            }
            guard let port = Int(line.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                process.terminate()
                let said = (try? String(contentsOf: directory.appendingPathComponent("stderr.txt"), encoding: .utf8)) ?? ""
                throw RelayError("the relay did not start (python3 with smtpd needed): \(line)\(said)")
            }
            self.port = port
        }

        /// The messages received so far, as the relay parsed them.
        func received() throws -> [[String: Any]] {
            try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.map {
                try JSONSerialization.jsonObject(with: Data(contentsOf: directory.appendingPathComponent($0))) as? [String: Any] ?? [:]
            }
        }

        deinit {
            process.terminate()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    struct RelayError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    @Test func aMessageArrivesWholeWithItsEnvelopeHeadersDotLinesAndUnicode() async throws {
        let relay = try await Relay()
        let transport = SMTPTransport(host: "127.0.0.1", port: relay.port, heloName: "data4help.test")
        let ascii = "First line.\n.A line that starts with a dot\n..and two dots\n\nhttps://data4help.example/me/confirm?token=d4hc_abc-_123"
        let unicode = "Grüße aus Milano — città\n.dot line\n日本語"
        try await transport.send(
            RenderedMail(sender: "no-reply@data4help.test", recipient: "ada@example.org", subject: "Confirm your Data4Help account", body: ascii))
        try await transport.send(RenderedMail(sender: "no-reply@data4help.test", recipient: "bea@example.org", subject: "Second", body: unicode))
        let received = try relay.received()
        #expect(received.count == 2)
        let first = try #require(received.first { $0["subject"] as? String == "Confirm your Data4Help account" })
        #expect(first["mailFrom"] as? String == "no-reply@data4help.test")
        #expect(first["rcptTo"] as? [String] == ["ada@example.org"])
        #expect(first["to"] as? String == "ada@example.org")
        #expect(first["from"] as? String == "Data4Help <no-reply@data4help.test>")
        #expect(first["contentType"] as? String == "text/plain")
        #expect((first["messageId"] as? String)?.hasSuffix("@data4help.test>") == true)
        #expect((first["body"] as? String)?.replacingOccurrences(of: "\r\n", with: "\n") == ascii)
        let second = try #require(received.first { $0["subject"] as? String == "Second" })
        #expect((second["body"] as? String)?.replacingOccurrences(of: "\r\n", with: "\n") == unicode)
    }

    @Test func aRefusalIsPermanent() async throws {
        let relay = try await Relay()
        let refused = SMTPTransport(host: "127.0.0.1", port: relay.port, heloName: "data4help.test")
        await #expect(throws: MailTransportError.permanent("DATA answered 550")) {
            try await refused.send(RenderedMail(sender: "no-reply@data4help.test", recipient: "refused@example.org", subject: "S", body: "B"))
        }
        #expect(try relay.received().isEmpty)
    }

    @Test func anUnreachableRelayIsTemporary() async throws {
        // A port nobody listens on: the relay is down, try again later.
        let closed = SMTPTransport(host: "127.0.0.1", port: 1, heloName: "data4help.test")
        await #expect {
            try await closed.send(RenderedMail(sender: "no-reply@data4help.test", recipient: "ada@example.org", subject: "S", body: "B"))
        } throws: { error in
            if case .temporary = error as? MailTransportError { return true }
            return false
        }
    }

    @Test func anAddressPlainSMTPCannotCarryIsRefusedBeforeConnecting() async throws {
        let nowhere = SMTPTransport(host: "127.0.0.1", port: 1, heloName: "data4help.test")
        await #expect(throws: MailTransportError.permanent("an address SMTP cannot carry without SMTPUTF8")) {
            try await nowhere.send(RenderedMail(sender: "no-reply@data4help.test", recipient: "josé@example.org", subject: "S", body: "B"))
        }
    }
}
