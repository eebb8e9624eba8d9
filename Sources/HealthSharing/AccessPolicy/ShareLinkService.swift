import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation

/// Why a share-link operation was refused.
package enum ShareLinkError: Error, Equatable {
    case notFound
    /// The person has the most links that still open.
    case tooMany(maximum: Int)
}

/// A share link as created: the link itself is shown this once and never again.
package struct CreatedShareLink: Sendable {
    package let link: ShareLink
    package let token: String
}

/// What opening a link came to.
package enum ShareLinkOpening: Sendable {
    /// No link opens with that token (unknown, revoked or expired: told apart to nobody).
    case notFound
    /// The link asks for its PIN; `wrong` after a wrong one, with the tries left.
    case pinRequired(label: String, wrong: Bool, triesLeft: Int)
    /// Too many wrong PINs: the link opens no more.
    case locked
    /// The data, one daily summary per type (each view in the owner's access log).
    case shown(ShareLink, owner: String, [OwnDataSummary])
}

/// Share links (the Access Policy Manager, for someone with no account): a person shares chosen
/// types over a window with, say, their doctor — read-only, for at most 30 days, optionally
/// behind a PIN — by a link to a page of charts and a printable summary. The token has 256 bits
/// and only its SHA-256 is stored; the owner can revoke it at once and sees every opening.
package struct ShareLinkService: Sendable {
    let store: ShareLinkStore
    let ownData: OwnDataReader
    let hasher: PasswordHasher

    /// The longest a link lasts, and the longest window it shows.
    package static let maximumLifetime: TimeInterval = 30 * 86_400
    package static let maximumWindowDays = 366
    /// Links that still open one person may have.
    package static let maximumOpen = 20
    /// Wrong PINs after which a link locks for good.
    package static let pinTries = 10

    package init(database: Database, hasher: PasswordHasher) {
        store = ShareLinkStore(database: database)
        ownData = OwnDataReader(database: database)
        self.hasher = hasher
    }

    package func create(_ share: NewShareLink, by individual: IndividualID) async throws -> CreatedShareLink {
        let token = BearerSecret.newShareLinkToken()
        var pinHash: String?
        if let pin = share.pin { pinHash = try await hasher.hash(pin: pin) }
        guard
            let link = try await store.create(
                individualId: individual.rowId, tokenHash: BearerSecret.digest(token), label: share.label, typeCodes: share.types.map(\.storageCode),
                dataFrom: share.dataFrom, dataTo: share.dataTo, expiresAt: share.expiresAt, pinHash: pinHash, maximum: Self.maximumOpen)
        else { throw ShareLinkError.tooMany(maximum: Self.maximumOpen) }
        return CreatedShareLink(link: link, token: token)
    }

    package func links(of individual: IndividualID) async throws -> [ShareLink] {
        try await store.links(individualId: individual.rowId, limit: 100)
    }

    /// One link and its latest 200 openings.
    package func link(_ id: UUID, of individual: IndividualID) async throws -> (ShareLink, [ShareLinkView]) {
        guard let found = try await store.link(individualId: individual.rowId, publicId: id, viewLimit: 200) else { throw ShareLinkError.notFound }
        return found
    }

    package func revoke(_ id: UUID, by individual: IndividualID) async throws {
        guard try await store.revoke(individualId: individual.rowId, publicId: id) else { throw ShareLinkError.notFound }
    }

    /// Opens a link by its token from `address`, with the PIN when one was sent. A malformed
    /// token is looked up like any other (its digest matches nothing), so every refusal costs
    /// one indexed lookup of a SHA-256 and says the same.
    package func open(token: String, pin: String?, address: String) async throws -> ShareLinkOpening {
        guard let opening = try await store.opening(tokenHash: BearerSecret.digest(token)) else { return .notFound }
        let link = opening.link
        if link.failedPins >= Self.pinTries {
            try await store.recordView(link, address: address, outcome: .locked, itemCount: 0, types: [])
            return .locked
        }
        if let pinHash = opening.pinHash {
            guard let pin else { return .pinRequired(label: link.label, wrong: false, triesLeft: Self.pinTries - link.failedPins) }
            guard await hasher.verify(pin, against: pinHash) else {
                let failed = try await store.recordView(link, address: address, outcome: .wrongPin, itemCount: 0, types: [])
                return failed >= Self.pinTries ? .locked : .pinRequired(label: link.label, wrong: true, triesLeft: Self.pinTries - failed)
            }
        }
        let owner = IndividualID(rowId: link.individualId)
        var summaries: [OwnDataSummary] = []
        for type in link.typeCodes.compactMap(SampleType.init(storageCode:)) where type.hasDailyRollup {
            summaries.append(try await ownData.summary(of: owner, type: type, bucket: .day, from: link.dataFrom, to: link.dataTo))
        }
        try await store.recordView(
            link, address: address, outcome: .shown, itemCount: summaries.reduce(0) { $0 + $1.buckets.count },
            types: summaries.map(\.type.rawValue))
        return .shown(link, owner: opening.ownerName, summaries)
    }
}

/// A share link as the person asks for it, validated.
package struct NewShareLink: Sendable {
    package var label: String
    package var types: [SampleType]
    package var dataFrom: Date
    package var dataTo: Date
    package var expiresAt: Date
    package var pin: SharePIN?

    package init(label: String, types: [SampleType], dataFrom: Date, dataTo: Date, expiresAt: Date, pin: SharePIN?) {
        self.label = label
        self.types = types
        self.dataFrom = dataFrom
        self.dataTo = dataTo
        self.expiresAt = expiresAt
        self.pin = pin
    }
}
