import Crypto
import Foundation

/// The `Data4Help-Signature` header: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`,
/// keyed with the endpoint's secret (the Stripe/Terra scheme). Receivers recompute the HMAC over
/// the raw body, compare in constant time, and reject timestamps far from their clock.
///
/// A request that acts on a resource (the dispatch centre's reports) also signs what it acts
/// on: with a `request` of `"POST /api/dispatch/incidents/<id>/acknowledge"`, the HMAC covers
/// `"<t>.<request>.<body>"`, so a signature cannot be replayed on another incident or verb.
package enum WebhookSignature {
    package static let header = "Data4Help-Signature"

    package static func header(secret: String, timestamp: Int64, request: String? = nil, body: some Sequence<UInt8>) -> String {
        "t=\(timestamp),v1=\(hex(secret: secret, timestamp: timestamp, request: request, body: body))"
    }

    package static func hex(secret: String, timestamp: Int64, request: String? = nil, body: some Sequence<UInt8>) -> String {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: Data(secret.utf8)))
        hmac.update(data: Data("\(timestamp).".utf8))
        if let request { hmac.update(data: Data("\(request).".utf8)) }
        hmac.update(data: Data(body))
        return hmac.finalize().map { String(format: "%02x", $0) }.joined()
    }

    /// Whether `header` signs `body` with `secret` within `tolerance` of `now`.
    package static func verify(
        header: String, secret: String, request: String? = nil, body: [UInt8], now: Date = Date(), tolerance: TimeInterval = 300
    ) -> Bool {
        var timestamp: Int64?
        var signatures: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { timestamp = Int64(pair[1]) } else if pair[0] == "v1" { signatures.append(pair[1]) }
        }
        guard let timestamp, abs(now.timeIntervalSince1970 - Double(timestamp)) <= tolerance else { return false }
        let key = SymmetricKey(data: Data(secret.utf8))
        let signed = Data("\(timestamp).".utf8) + Data((request.map { "\($0)." } ?? "").utf8) + Data(body)
        return signatures.contains { candidate in
            guard let code = bytes(hex: candidate) else { return false }
            return HMAC<SHA256>.isValidAuthenticationCode(code, authenticating: signed, using: key)  // constant time
        }
    }

    private static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }
}
