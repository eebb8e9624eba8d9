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
    /// A parser of a whole number within `range` ("must be an integer from 1 to 1000").
    static func integer(in range: ClosedRange<Int>) -> (String) throws(InvalidValue) -> Int {
        { (raw: String) throws(InvalidValue) -> Int in
            guard let value = Int(raw), range.contains(value) else {
                throw InvalidValue("must be an integer from \(range.lowerBound) to \(range.upperBound)")
            }
            return value
        }
    }

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
