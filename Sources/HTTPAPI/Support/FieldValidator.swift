import AccessManager

/// Collects every invalid field of a request before failing, so that one 422 lists them all.
///
/// ```swift
/// var fields = FieldValidator()
/// let email = fields.required("email", body.email, EmailAddress.init(parsing:))
/// try fields.finish()
/// ```
struct FieldValidator {
    private(set) var issues: [Problem.FieldIssue] = []

    /// Parses a field that must be present; records "is required" or the type's own reason.
    mutating func required<Raw, Value>(_ field: String, _ raw: Raw?, _ parse: (Raw) throws(InvalidValue) -> Value) -> Value? {
        guard let raw else {
            issues.append(.init(field: field, message: "is required"))
            return nil
        }
        return optional(field, raw, parse)
    }

    /// Parses a field that may be absent (nil stays nil).
    mutating func optional<Raw, Value>(_ field: String, _ raw: Raw?, _ parse: (Raw) throws(InvalidValue) -> Value) -> Value? {
        guard let raw else { return nil }
        do {
            return try parse(raw)
        } catch {
            issues.append(.init(field: field, message: error.reason))
            return nil
        }
    }

    /// Records a rule that spans fields.
    mutating func fail(_ field: String, _ message: String) {
        issues.append(.init(field: field, message: message))
    }

    /// Throws the 422 listing every recorded issue, if any.
    func finish() throws(Problem) {
        if !issues.isEmpty { throw Problem.validation(issues) }
    }
}
