import Foundation
import Hummingbird
import Logging

/// The credentials of an `Authorization` header. Scheme names are case-insensitive
/// (RFC 9110 §11.1), which is why this does not use a prefix match on "Bearer ".
enum AuthorizationHeader: Equatable {
    case bearer(String)
    case basic(user: String, password: String)
    case none

    init(_ headers: HTTPFields) {
        guard let value = headers[.authorization] else { self = .none; return }
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2 else { self = .none; return }
        // Spaces and tabs around the credentials (the only whitespace a header value holds);
        // the scheme compared without case. Byte by byte: Foundation's trimming went through
        // NSString on every authenticated request.
        let rest = parts[1]
        let isText = { (character: Character) in character != " " && character != "\t" }
        let credentials = rest.lastIndex(where: isText).map { String(rest[(rest.firstIndex(where: isText) ?? rest.startIndex)...$0]) } ?? ""
        switch parts[0].lowercased() {
        case "bearer":
            self = credentials.isEmpty ? .none : .bearer(credentials)
        case "basic":
            guard let data = Data(base64Encoded: credentials),
                let decoded = String(data: data, encoding: .utf8),
                let colon = decoded.firstIndex(of: ":")
            else { self = .none; return }
            self = .basic(user: String(decoded[..<colon]), password: String(decoded[decoded.index(after: colon)...]))
        default:
            self = .none
        }
    }
}
