import Foundation

/// A person's full name as they want it shown: 1–200 characters, trimmed, no control characters.
package struct PersonName: Sendable, Hashable {
    package let value: String

    package init(parsing raw: String) throws(InvalidValue) {
        self.value = try raw.trimmedName(length: 1...200)
    }
}
