import Foundation

/// An IANA time zone identifier (`Europe/Rome`) that this machine knows.
package struct TimeZoneName: Sendable, Hashable {
    package let value: String

    package init(parsing raw: String) throws(InvalidValue) {
        guard raw.utf8.count <= 64, !raw.isEmpty, TimeZone(identifier: raw) != nil else {
            throw InvalidValue("must be an IANA time zone such as Europe/Rome or UTC")
        }
        self.value = raw
    }
}
