import Foundation

/// A coarse home region as an ISO 3166-2 subdivision code (`IT-MI`), never an address.
package struct AreaCode: Sendable, Hashable {
    package let value: String

    package init(parsing raw: String) throws(InvalidValue) {
        let candidate = raw.trimmingCharacters(in: .whitespaces).uppercased()
        let parts = candidate.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2,
            parts[0].count == 2, parts[0].allSatisfy({ $0.isASCII && $0.isLetter }),
            (1...3).contains(parts[1].count), parts[1].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
        else { throw InvalidValue("must be an ISO 3166-2 subdivision code such as IT-MI") }
        self.value = candidate
    }
}
