import Foundation

/// The PIN a share link may ask for: 4 to 8 digits (said aloud or written on a referral).
package struct SharePIN: Sendable, Hashable {
    package let value: String

    package init(parsing raw: String) throws(InvalidValue) {
        guard (4...8).contains(raw.utf8.count), raw.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            throw InvalidValue("must be 4 to 8 digits")
        }
        value = raw
    }
}
