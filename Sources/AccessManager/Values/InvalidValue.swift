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
    /// True when the string holds a control character (U+0000–U+001F, U+007F–U+009F).
    var containsControlCharacter: Bool {
        unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
}
