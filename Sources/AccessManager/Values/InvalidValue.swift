import Foundation

/// A value that cannot be turned into its type. `reason` is shown to the caller next to the
/// field name, so it describes the rule, never echoes the value (which may be personal data).
package struct InvalidValue: Error, Equatable, CustomStringConvertible {
    package let reason: String

    package init(_ reason: String) {
        self.reason = reason
    }

    package var description: String { reason }
}

extension String {
    /// The string trimmed of surrounding white space, when its length is within bounds and it
    /// holds no control character: the rule of every free-text name (people, organisations, keys).
    func trimmedName(length: ClosedRange<Int>) throws(InvalidValue) -> String {
        // The upper bound holds for the text as sent (the documented maxLength), the lower one
        // for what is left after trimming.
        guard count <= length.upperBound else { throw InvalidValue("must be at most \(length.upperBound) characters") }
        let trimmed = trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw InvalidValue("must not be empty") }
        guard trimmed.count >= length.lowerBound else { throw InvalidValue("must be at least \(length.lowerBound) characters") }
        guard !trimmed.containsControlCharacter else { throw InvalidValue("must not contain control characters") }
        guard !trimmed.containsInvisibleFormatCharacter else {
            throw InvalidValue("must not contain invisible or direction-changing characters (such as U+200B or U+202E)")
        }
        return trimmed
    }

    /// True when the string holds an invisible format character (Unicode category Cf: zero-width
    /// spaces, bidirectional overrides and isolates, the BOM, …) that would make a name shown on a
    /// page read differently from what it is. The zero-width joiner and non-joiner are kept:
    /// Persian, Indic scripts and emoji sequences need them.
    var containsInvisibleFormatCharacter: Bool {
        unicodeScalars.contains { $0.properties.generalCategory == .format && $0.value != 0x200C && $0.value != 0x200D }
    }

    /// True when the string holds a control character (U+0000–U+001F, U+007F–U+009F).
    package var containsControlCharacter: Bool {
        unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
}
