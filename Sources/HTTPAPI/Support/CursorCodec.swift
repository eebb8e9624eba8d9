import Foundation

/// Opaque pagination cursors: a version tag and a few fields, base64url-encoded. Clients treat
/// them as opaque; the server refuses one it cannot read, or one made for another listing.
enum CursorCodec {
    static func encode(_ tag: String, _ fields: [String]) -> String {
        Data(([tag] + fields).joined(separator: "|").utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The fields of a cursor with this tag and field count; nil for anything else.
    static func decode(_ cursor: String, tag: String, fieldCount: Int) -> [String]? {
        guard cursor.count <= 200 else { return nil }
        var base64 = cursor.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let text = String(data: data, encoding: .utf8) else { return nil }
        let parts = text.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == fieldCount + 1, parts[0] == tag else { return nil }
        return Array(parts.dropFirst())
    }
}
