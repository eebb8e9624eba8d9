/// A new password that meets the policy: at least 10 characters, at most 1024 bytes
/// (the upper bound keeps hashing cost bounded). Its description never shows it.
package struct Password: Sendable, CustomStringConvertible {
    package static let minimumLength = 10
    package static let maximumBytes = 1024

    package let value: String

    package init(parsing raw: String) throws(InvalidValue) {
        guard raw.count >= Self.minimumLength else {
            throw InvalidValue("must be at least \(Self.minimumLength) characters")
        }
        guard raw.utf8.count <= Self.maximumBytes else {
            throw InvalidValue("must be at most \(Self.maximumBytes) bytes")
        }
        self.value = raw
    }

    package var description: String { "<password>" }
}
