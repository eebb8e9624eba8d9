import Foundation

/// An email address, trimmed and lower-cased so that one mailbox is one account.
package struct EmailAddress: Sendable, Hashable, CustomStringConvertible {
    package let value: String

    package init(parsing raw: String) throws(InvalidValue) {
        let candidate = raw.trimmingCharacters(in: .whitespaces).lowercased()
        guard candidate.utf8.count <= 254 else { throw InvalidValue("must be at most 254 characters") }
        let parts = candidate.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].utf8.count <= 64,
            parts[1].contains("."), !parts[1].hasPrefix("."), !parts[1].hasSuffix("."), !parts[1].contains(".."),
            !candidate.contains(where: { $0.isWhitespace }), !candidate.containsControlCharacter
        else { throw InvalidValue("must be an email address like name@example.org") }
        self.value = candidate
    }

    /// Normalises what a login form sent without judging it: an unknown address simply matches nobody.
    package static func normalisedForLookup(_ raw: String) -> String {
        raw.trimmingCharacters(in: .whitespaces).lowercased()
    }

    package var description: String { value }
}
