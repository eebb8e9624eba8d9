import Foundation
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// A webhook URL as accepted at registration: absolute http(s), a host, no credentials, no
/// fragment, at most 2,048 characters; and, unless private networks are allowed (a development
/// setting), not an IP literal or name of a loopback, private, link-local or otherwise
/// non-public address. Names are resolved again before every attempt (`WebhookAddressPolicy`).
package struct WebhookURL: Sendable, Equatable {
    package let url: URL
    package var host: String { url.host(percentEncoded: false) ?? "" }
    package var string: String { url.absoluteString }

    package init(parsing text: String, allowPrivateNetworks: Bool) throws(WebhookURLError) {
        guard text.utf8.count <= 2048 else { throw .invalid("must be at most 2048 characters") }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            let url = components.url, url.host(percentEncoded: false)?.isEmpty == false
        else { throw .invalid("must be an absolute http or https URL") }
        guard scheme == "http" || scheme == "https" else { throw .invalid("must use http or https") }
        guard components.user == nil, components.password == nil else { throw .invalid("must not carry credentials") }
        guard components.fragment == nil else { throw .invalid("must not have a fragment") }
        self.url = url
        if !allowPrivateNetworks {
            let host = self.host.trimmingCharacters(in: CharacterSet(charactersIn: "[].")).lowercased()
            if host == "localhost" || host.hasSuffix(".localhost") || host.hasSuffix(".local") || host.hasSuffix(".internal") {
                throw .invalid("must not point at a local or internal host")
            }
            if let address = IPAddress(literal: host) {
                guard address.isPublic else { throw .invalid("must not point at a loopback, private or link-local address") }
            } else if Self.looksNumeric(host) {
                // 2130706433, 0x7f.1, 0177.0.0.1, 127.1: not dotted-decimal, yet resolvers and URL
                // parsers read them as IPv4 addresses — which the check above would not see.
                throw .invalid("must be a name or a dotted-decimal IPv4 address (no decimal, octal, hex or short forms)")
            }
        }
    }
}

extension WebhookURL {
    /// A host whose last label is a number (decimal, or hex with 0x) is an IPv4 address to the
    /// WHATWG URL standard and to getaddrinfo, whatever its form.
    static func looksNumeric(_ host: String) -> Bool {
        guard let last = host.split(separator: ".").last, !last.isEmpty else { return false }
        let text = last.lowercased()
        if text.allSatisfy(\.isNumber) { return true }
        return text.hasPrefix("0x") && text.dropFirst(2).allSatisfy(\.isHexDigit)
    }
}

package enum WebhookURLError: Error, Equatable {
    case invalid(String)
}

/// An IPv4 or IPv6 address, to tell public addresses from the ones a webhook must never reach.
struct IPAddressFormatError: Error {}

package enum IPAddress: Sendable, Equatable {
    case v4(UInt32)
    case v6([UInt8])

    /// The socket address of this address and `port`.
    func socketAddress(port: Int) throws -> SocketAddress {
        switch self {
        case .v4(let a):
            return try SocketAddress(ipAddress: "\(a >> 24).\(a >> 16 & 0xFF).\(a >> 8 & 0xFF).\(a & 0xFF)", port: port)
        case .v6(let b):
            var raw = in6_addr()
            withUnsafeMutableBytes(of: &raw) { $0.copyBytes(from: b) }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count)) != nil else { throw IPAddressFormatError() }
            return try SocketAddress(ipAddress: String(cString: text), port: port)
        }
    }

    package init?(literal: String) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 {
            self = .v4(UInt32(bigEndian: v4.s_addr))
        } else if inet_pton(AF_INET6, literal, &v6) == 1 {
            self = .v6(withUnsafeBytes(of: v6) { Array($0) })
        } else {
            return nil
        }
    }

    /// False for loopback, private (RFC 1918, unique local), shared (CGNAT), link-local,
    /// unspecified, benchmarking, documentation, multicast and reserved ranges, and for IPv6
    /// forms that embed such an IPv4 address.
    package var isPublic: Bool {
        switch self {
        case .v4(let a):
            let blocked: [(UInt32, Int)] = [
                (0x0000_0000, 8), (0x0A00_0000, 8), (0x6440_0000, 10), (0x7F00_0000, 8), (0xA9FE_0000, 16),
                (0xAC10_0000, 12), (0xC000_0000, 24), (0xC000_0200, 24), (0xC0A8_0000, 16), (0xC612_0000, 15),
                (0xC633_6400, 24), (0xCB00_7100, 24), (0xE000_0000, 4), (0xF000_0000, 4),
            ]
            return !blocked.contains { prefix, bits in a >> (32 - bits) == prefix >> (32 - bits) }
        case .v6(let b):
            if b[0..<12].allSatisfy({ $0 == 0 }) { return false }  // ::, ::1 and IPv4-compatible ::a.b.c.d (deprecated)
            if b[0..<10].allSatisfy({ $0 == 0 }), b[10] == 0xFF, b[11] == 0xFF {  // ::ffff:a.b.c.d
                return IPAddress.v4(b[12..<16].reduce(0) { $0 << 8 | UInt32($1) }).isPublic
            }
            if b[0] == 0x00, b[1] == 0x64, b[2] == 0xFF, b[3] == 0x9B { return false }  // NAT64 64:ff9b::/96 and 64:ff9b:1::/48
            if b[0] == 0x01, b[1..<8].allSatisfy({ $0 == 0 }) { return false }  // 100::/64 discard-only
            if b[0] == 0x20, b[1] == 0x01, b[2] == 0x00, b[3] == 0x00 { return false }  // Teredo 2001::/32 (embeds any IPv4)
            if b[0] == 0xFE, b[1] & 0xC0 == 0xC0 { return false }  // fec0::/10 site-local (deprecated)
            if b[0] & 0xFE == 0xFC { return false }  // fc00::/7 unique local
            if b[0] == 0xFE, b[1] & 0xC0 == 0x80 { return false }  // fe80::/10 link-local
            if b[0] == 0xFF { return false }  // multicast
            if b[0] == 0x20, b[1] == 0x01, b[2] == 0x0D, b[3] == 0xB8 { return false }  // 2001:db8::/32 documentation
            if b[0] == 0x20, b[1] == 0x02 { return false }  // 6to4 (embeds any IPv4)
            return true
        }
    }
}

/// Where a webhook's host may be reached: every address it resolves to must be public (unless
/// `allowPrivateNetworks`, for development and tests). Checked before every attempt — a name
/// that resolved publicly at registration may not later point inside — and, for the connection
/// itself, by `WebhookEgressProxy`, which connects to the very address it checked.
/// Resolution runs on NIO's blocking-I/O thread pool (`getaddrinfo` blocks).
package struct WebhookAddressPolicy: Sendable {
    package struct Refusal: Error, Sendable, Equatable {
        package let reason: String
        /// The host resolves to an address a webhook may not reach (otherwise: to none).
        package let notAllowed: Bool
    }

    package let allowPrivateNetworks: Bool
    private let resolver: @Sendable (String) async -> [IPAddress]

    /// `resolver` answers a host's addresses; the system's (`getaddrinfo`) unless a test gives one.
    package init(allowPrivateNetworks: Bool, resolver: (@Sendable (String) async -> [IPAddress])? = nil) {
        self.allowPrivateNetworks = allowPrivateNetworks
        self.resolver = resolver ?? { await Self.resolve($0) }
    }

    /// Nil when the host may be reached, otherwise why not.
    package func refusal(for host: String) async -> String? {
        switch await checkedAddresses(host) {
        case .success: nil
        case .failure(let refusal): refusal.reason
        }
    }

    /// The address to connect to for `host:port`, from one resolution whose every address passed.
    package func pinnedAddress(host: String, port: Int) async -> Result<SocketAddress, Refusal> {
        switch await checkedAddresses(host) {
        case .failure(let refusal): return .failure(refusal)
        case .success(let addresses):
            guard let first = addresses.first, let address = try? first.socketAddress(port: port) else {
                return .failure(Refusal(reason: "host did not resolve", notAllowed: false))
            }
            return .success(address)
        }
    }

    private func checkedAddresses(_ host: String) async -> Result<[IPAddress], Refusal> {
        let name = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        let addresses = if let literal = IPAddress(literal: name) { [literal] } else { await resolver(name) }
        if addresses.isEmpty { return .failure(Refusal(reason: "host did not resolve", notAllowed: false)) }
        if !allowPrivateNetworks, !addresses.allSatisfy(\.isPublic) {
            return .failure(Refusal(reason: "address not allowed", notAllowed: true))
        }
        return .success(addresses)
    }

    static func resolve(_ host: String) async -> [IPAddress] {
        (try? await NIOThreadPool.singleton.runIfActive { Self.resolveBlocking(host) }) ?? []
    }

    private static func resolveBlocking(_ host: String) -> [IPAddress] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0 else { return [] }
        defer { freeaddrinfo(list) }
        var addresses: [IPAddress] = []
        var node = list
        while let info = node?.pointee {
            if info.ai_family == AF_INET, let raw = info.ai_addr {
                let address = raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
                addresses.append(.v4(UInt32(bigEndian: address)))
            } else if info.ai_family == AF_INET6, let raw = info.ai_addr {
                let bytes = raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                    withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
                }
                addresses.append(.v6(bytes))
            }
            node = info.ai_next
        }
        return addresses
    }
}
