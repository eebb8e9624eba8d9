import Foundation

/// An organisation's website as it publishes it: an absolute `https` URL with a host, at most
/// 300 characters, no credentials (a link people click from our pages must not carry any).
package struct WebsiteAddress: Sendable, Hashable {
    package let value: String

    package init(parsing raw: String) throws(InvalidValue) {
        let candidate = raw.trimmingCharacters(in: .whitespaces)
        guard candidate.utf8.count <= 300, !candidate.containsControlCharacter, !candidate.contains(where: { $0.isWhitespace }),
            let components = URLComponents(string: candidate), components.scheme?.lowercased() == "https",
            let host = components.host, !host.isEmpty, components.user == nil, components.password == nil
        else { throw InvalidValue("must be an https address like https://example.org") }
        value = candidate
    }
}
