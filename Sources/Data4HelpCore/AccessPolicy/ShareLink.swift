import Foundation

/// A read-only share of chosen types over a window, opened by a link with no account (a
/// doctor's), as its owner sees it. The token itself is never stored.
package struct ShareLink: Sendable, Equatable {
    package var sequence: Int64
    package var publicId: UUID
    package var individualId: Int64
    package var label: String
    /// `SampleType.storageCode`s.
    package var typeCodes: [Int16]
    package var dataFrom: Date
    package var dataTo: Date
    package var expiresAt: Date
    package var hasPin: Bool
    package var failedPins: Int
    package var createdAt: Date
    package var revokedAt: Date?
    /// How many times it showed data, and when last.
    package var views: Int
    package var lastViewedAt: Date?

    package init(
        sequence: Int64, publicId: UUID, individualId: Int64, label: String, typeCodes: [Int16], dataFrom: Date, dataTo: Date,
        expiresAt: Date, hasPin: Bool, failedPins: Int, createdAt: Date, revokedAt: Date?, views: Int, lastViewedAt: Date?
    ) {
        self.sequence = sequence
        self.publicId = publicId
        self.individualId = individualId
        self.label = label
        self.typeCodes = typeCodes
        self.dataFrom = dataFrom
        self.dataTo = dataTo
        self.expiresAt = expiresAt
        self.hasPin = hasPin
        self.failedPins = failedPins
        self.createdAt = createdAt
        self.revokedAt = revokedAt
        self.views = views
        self.lastViewedAt = lastViewedAt
    }
}

/// What one opening of a share link came to.
package enum ShareLinkViewOutcome: String, Sendable, CaseIterable {
    case shown
    case wrongPin = "wrong_pin"
    case locked
}

/// One opening of a share link: when, from which address (a digest: the same address gives the
/// same digest, and the digest gives no address), and what it came to.
package struct ShareLinkView: Sendable, Equatable {
    package var at: Date
    package var addressDigest: String
    package var outcome: ShareLinkViewOutcome

    package init(at: Date, addressDigest: String, outcome: ShareLinkViewOutcome) {
        self.at = at
        self.addressDigest = addressDigest
        self.outcome = outcome
    }
}
