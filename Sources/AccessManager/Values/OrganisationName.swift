import Foundation

/// A third-party organisation's name: 2–200 characters, trimmed, no control characters.
package struct OrganisationName: Sendable, Hashable {
    package let value: String

    package init(parsing raw: String) throws(InvalidValue) {
        let trimmed = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.count >= 2 else { throw InvalidValue("must be at least 2 characters") }
        guard trimmed.count <= 200 else { throw InvalidValue("must be at most 200 characters") }
        guard !trimmed.containsControlCharacter else { throw InvalidValue("must not contain control characters") }
        self.value = trimmed
    }
}
