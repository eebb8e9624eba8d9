/// Sex as the individual states it; a public aggregate dimension.
package enum Sex: String, Sendable, CaseIterable {
    case female, male, other

    package init(parsing raw: String) throws(InvalidValue) {
        guard let sex = Sex(rawValue: raw) else { throw InvalidValue("must be one of female, male, other") }
        self = sex
    }
}
