import Crypto
import Foundation

/// Opaque pagination cursors: a version tag and a few fields, followed by an HMAC-SHA256 tag
/// (truncated to 128 bits) under the server's cursor key, base64url-encoded. Clients treat them
/// as opaque; a cursor is authenticated before a single field of it is parsed, so one the server
/// did not issue — forged, edited or made for another listing — is refused (422) and its numbers
/// never reach arithmetic or SQL.
///
/// The key is the application's (`CursorKey`, shared by every instance through PostgreSQL) and
/// reaches the codec as a task-local set by `CursorKeyMiddleware` for the request being served.
enum CursorCodec {
    /// The key of the request being served.
    @TaskLocal static var key: SymmetricKey?

    /// Bytes of the tag kept: 128 bits, as for HMAC-SHA256-128 (RFC 4868).
    static let tagLength = 16
    /// The longest cursor read; no cursor this server issues comes near it.
    static let maximumLength = 300

    static func encode(_ tag: String, _ fields: [String]) -> String {
        let payload = Array(([tag] + fields).joined(separator: "|").utf8)
        return base64URL(payload + Array(authenticationTag(payload, key: key ?? fallbackKey)))
    }

    /// The fields of a cursor with this tag and field count, after its tag checks out; nil for
    /// anything else.
    static func decode(_ cursor: String, tag: String, fieldCount: Int) -> [String]? {
        guard cursor.utf8.count <= maximumLength,
            let bytes = bytes(ofBase64URL: cursor), bytes.count > tagLength
        else { return nil }
        let payload = Array(bytes.dropLast(tagLength)), received = bytes.suffix(tagLength)
        // HMAC's own comparison is constant-time; the truncated tag is compared the same way.
        let expected = authenticationTag(payload, key: key ?? fallbackKey)
        guard constantTimeEqual(Array(expected), Array(received)), let text = String(validating: payload, as: UTF8.self) else { return nil }
        let parts = text.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == fieldCount + 1, parts[0] == tag else { return nil }
        return Array(parts.dropFirst())
    }

    /// Used only outside a served request (unit tests, commands): a key of this process.
    private static let fallbackKey = SymmetricKey(size: .bits256)

    private static func authenticationTag(_ payload: [UInt8], key: SymmetricKey) -> ArraySlice<UInt8> {
        Array(HMAC<SHA256>.authenticationCode(for: payload, using: key)).prefix(tagLength)
    }

    private static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

    /// Base64url without padding (RFC 4648 §5). Byte by byte: Foundation's
    /// `replacingOccurrences` goes through NSString on Linux, and three of them were 2.5 % of a
    /// listing's CPU (`perf` under `bench reads`).
    private static func base64URL(_ bytes: [UInt8]) -> String {
        var text: [UInt8] = []
        for byte in Data(bytes).base64EncodedData() {
            switch byte {
            case UInt8(ascii: "+"): text.append(UInt8(ascii: "-"))
            case UInt8(ascii: "/"): text.append(UInt8(ascii: "_"))
            case UInt8(ascii: "="): continue
            default: text.append(byte)
            }
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static func bytes(ofBase64URL text: String) -> [UInt8]? {
        var base64: [UInt8] = []
        base64.reserveCapacity(text.utf8.count + 3)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "-"): base64.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): base64.append(UInt8(ascii: "/"))
            case UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="): return nil  // not base64url
            default: base64.append(byte)
            }
        }
        base64 += Array(repeating: UInt8(ascii: "="), count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: Data(base64)).map { Array($0) }
    }
}
