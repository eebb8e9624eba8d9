import AsyncHTTPClient
import Foundation
import HealthSharing
import Logging
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

/// Webhook connections go to the address that was checked: the egress proxy resolves a
/// receiver's name once, checks it, and connects there; the HTTP client never resolves the
/// name itself (DNS rebinding: a name can answer a public address to a check and a private one
/// to the connection that follows).
@Suite("Webhook egress: one resolution, checked, and the connection goes there")
struct WebhookEgressTests {
    static let logger = Logger(label: "data4help.tests")

    /// POSTs through a proxy over `policy` to `http://<host>:<receiver port>/hooks/data4help`.
    static func post(host: String, policy: WebhookAddressPolicy, receiver: WebhookReceiver) async throws -> Result<Int, any Error> {
        let proxy = try await WebhookEgressProxy.start(policy: policy, logger: logger)
        // The proxy's answer is what these tests read: give it time on a loaded machine (5 s,
        // the server's own bound, once ran out beside a build and the test saw a timeout).
        let client = WebhookDispatcher.client(through: proxy, timeout: .seconds(60), connect: .seconds(60))
        var request = HTTPClientRequest(url: "http://\(host):\(receiver.port)/hooks/data4help")
        request.method = .POST
        request.body = .bytes(ByteBuffer(string: #"{"type":"test"}"#))
        let result: Result<Int, any Error>
        do {
            result = .success(Int(try await client.execute(request, timeout: .seconds(60)).status.code))
        } catch {
            result = .failure(error)
        }
        try await client.shutdown()
        await proxy.close()
        return result
    }

    /// A name only our resolver knows reaches the receiver: the client did not resolve it (the
    /// system resolver has never heard of `.invalid`), the proxy connected where it resolved,
    /// and the receiver saw its own name in `Host`.
    @Test func theConnectionGoesToTheAddressTheProxyResolved() async throws {
        let receiver = try WebhookReceiver()
        let server = receiver.start()
        defer { server.cancel() }
        let policy = WebhookAddressPolicy(allowPrivateNetworks: true) { name in
            name == "hooks.receiver.invalid" ? [IPAddress(literal: "127.0.0.1")!] : []
        }
        var status: Int?
        for _ in 0..<50 where status == nil {  // until the receiver listens
            status = try? await Self.post(host: "hooks.receiver.invalid", policy: policy, receiver: receiver).get()
            if status == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(status == 204)
        #expect(receiver.received.map(\.host) == ["hooks.receiver.invalid:\(receiver.port)"])
    }

    /// A name that answers a public address to the dispatcher's check and loopback to the next
    /// question never gets a connection to loopback: the proxy's own resolution is the one
    /// checked and the one connected to.
    @Test func aNameThatRebindsToLoopbackIsRefusedAtConnection() async throws {
        let receiver = try WebhookReceiver()
        let server = receiver.start()
        defer { server.cancel() }
        let answers = Mutex(0)
        let policy = WebhookAddressPolicy(allowPrivateNetworks: false) { _ in
            answers.withLock {
                $0 += 1; return $0
            } == 1 ? [IPAddress(literal: "93.184.215.14")!] : [IPAddress(literal: "127.0.0.1")!]
        }
        #expect(await policy.refusal(for: "rebind.attacker.invalid") == nil, "the check sees a public address")
        let result = try await Self.post(host: "rebind.attacker.invalid", policy: policy, receiver: receiver)
        #expect(throws: HTTPClientError.invalidProxyResponse) { try result.get() }
        try await Task.sleep(for: .milliseconds(300))
        #expect(receiver.received.isEmpty)
        #expect(answers.withLock { $0 } == 2)
    }

    /// Without a proxy credential the port is no open proxy for other local processes.
    @Test func theProxyServesOnlyThisProcess() async throws {
        let proxy = try await WebhookEgressProxy.start(policy: WebhookAddressPolicy(allowPrivateNetworks: true), logger: Self.logger)
        let answer = try await RawHTTP.exchange(port: proxy.port, "CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n")
        #expect(answer.hasPrefix("HTTP/1.1 407 "), "\(answer)")
        await proxy.close()
    }
}
