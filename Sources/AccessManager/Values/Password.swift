/// A new password that meets the policy (NIST SP 800-63B §5.1.1.2): at least 10 characters not
/// counting invisible ones, not only spaces, not one of the most common passwords (`CommonPasswords`),
/// not one character repeated; at most 1024 bytes (the upper bound keeps hashing cost bounded).
/// No composition rules. Its description never shows it.
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
        // Ten zero-width spaces are not ten characters of secret, nor are ten spaces, nor "aaaaaaaaaa".
        let visible = raw.unicodeScalars.filter { $0.properties.generalCategory != .format && $0.properties.generalCategory != .control }
        guard visible.count >= Self.minimumLength else {
            throw InvalidValue("must have at least \(Self.minimumLength) characters, not counting invisible ones")
        }
        guard Set(visible.filter { !$0.properties.isWhitespace }).count > 1 else {
            throw InvalidValue("must not be only spaces or one character repeated")
        }
        guard !CommonPasswords.all.contains(Substring(raw.lowercased())) else {
            throw InvalidValue("is one of the most commonly used passwords; choose another")
        }
        self.value = raw
    }

    package var description: String { "<password>" }
}
