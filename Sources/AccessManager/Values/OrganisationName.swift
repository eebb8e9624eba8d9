import Foundation

/// A third-party organisation's name: 2–200 characters, trimmed, no control characters.
package struct OrganisationName: Sendable, Hashable {
    package let value: String

    package init(parsing raw: String) throws(InvalidValue) {
        self.value = try raw.trimmedName(length: 2...200)
    }
}
