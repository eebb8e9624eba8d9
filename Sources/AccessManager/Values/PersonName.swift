import Foundation

/// A person's full name as they want it shown: 1–200 characters, trimmed, no control characters.
package struct PersonName: Sendable, Hashable {
    package let value: String

    package init(parsing raw: String) throws(InvalidValue) {
        let trimmed = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw InvalidValue("must not be empty") }
        guard trimmed.count <= 200 else { throw InvalidValue("must be at most 200 characters") }
        guard !trimmed.containsControlCharacter else { throw InvalidValue("must not contain control characters") }
        self.value = trimmed
    }
}
