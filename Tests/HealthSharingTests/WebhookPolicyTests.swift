import Foundation
import HealthSharing
import Testing

@Suite("Webhook URLs, addresses and signatures")
struct WebhookPolicyTests {
    @Test(arguments: [
        "127.0.0.1", "127.255.0.1", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
        "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "198.18.0.1",
        "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a00:1", "2001:db8::1",
        "::127.0.0.1", "::8.8.8.8", "64:ff9b:1::a00:1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "fec0::1", "100::1",
    ])
    func nonPublicAddressesAreRefused(_ literal: String) throws {
        let address = try #require(IPAddress(literal: literal))
        #expect(!address.isPublic)
    }

    @Test(arguments: ["8.8.8.8", "1.1.1.1", "172.32.0.1", "192.169.0.1", "100.128.0.1", "2606:4700::1111", "::ffff:8.8.8.8"])
    func publicAddressesAreAllowed(_ literal: String) throws {
        #expect(try #require(IPAddress(literal: literal)).isPublic)
    }

    @Test func urlsMustBeHttpWithAPublicHost() throws {
        for text in ["https://example.com/hook", "http://example.com:8443/a?b=c", "https://[2606:4700::1111]/x"] {
            #expect((try? WebhookURL(parsing: text, allowPrivateNetworks: false)) != nil, "\(text)")
        }
        for text in [
            "ftp://example.com", "example.com/hook", "https://", "https://u:p@example.com", "https://example.com/#frag",
            "http://localhost:8080", "http://LOCALHOST./x", "http://printer.local/", "http://127.0.0.1/", "http://[::1]/",
            "https://" + String(repeating: "a", count: 2050) + ".com",
            "http://2130706433/", "http://0x7f.1/", "http://0177.0.0.1/", "http://127.1/", "http://0x7f000001/", "http://10.1/x",
            "http://[::127.0.0.1]/", "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
        ] {
            #expect(throws: WebhookURLError.self, "\(text)") { try WebhookURL(parsing: text, allowPrivateNetworks: false) }
        }
        #expect((try? WebhookURL(parsing: "http://127.0.0.1:9000/hook", allowPrivateNetworks: true)) != nil)
    }

    @Test func namesAreResolvedBeforeEveryAttempt() async {
        let policy = WebhookAddressPolicy(allowPrivateNetworks: false)
        #expect(await policy.refusal(for: "localhost") == "address not allowed")  // resolves to loopback
        #expect(await policy.refusal(for: "127.0.0.1") == "address not allowed")
        #expect(await policy.refusal(for: "no-such-host.invalid") == "host did not resolve")
        #expect(await WebhookAddressPolicy(allowPrivateNetworks: true).refusal(for: "localhost") == nil)
    }

    @Test func signaturesVerifyOnlyWithTheSecretTheBodyAndAFreshTimestamp() {
        let body = Array(#"{"id":"x","type":"ping"}"#.utf8)
        let now = Date()
        let header = WebhookSignature.header(secret: "d4hw_secret", timestamp: Int64(now.timeIntervalSince1970), body: body)
        #expect(header.hasPrefix("t=\(Int64(now.timeIntervalSince1970)),v1="))
        #expect(WebhookSignature.verify(header: header, secret: "d4hw_secret", body: body, now: now))
        #expect(!WebhookSignature.verify(header: header, secret: "d4hw_other", body: body, now: now))
        #expect(!WebhookSignature.verify(header: header, secret: "d4hw_secret", body: body + [0x20], now: now))
        #expect(!WebhookSignature.verify(header: header, secret: "d4hw_secret", body: body, now: now.addingTimeInterval(600)))
        // A known vector: HMAC-SHA256("key", "1.body"), computed independently with Python's hmac module.
        #expect(
            WebhookSignature.hex(secret: "key", timestamp: 1, body: Array("body".utf8))
                == "91b5374b153842ad05b2c4eab9349b8321b14703165bd3fb8b034dfb8be98ae5")
    }
}
