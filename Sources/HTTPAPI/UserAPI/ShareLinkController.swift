import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// `/api/users/share-links`: read-only links to chosen data for someone with no account (a
/// doctor). The link is in the creation's answer only; afterwards the person sees each link's
/// openings and can revoke it. Another person's link is 404.
struct ShareLinkController {
    let links: ShareLinkService
    let body: JSONBody
    /// The public address links start with (`PUBLIC_BASE_URL`).
    let baseURL: String

    func addRoutes(to group: some RouterMethods<IndividualRequestContext>) {
        group.get("share-links") { _, context in
            ItemList(items: try await links.links(of: context.individual).map { ShareLinkBody($0) })
        }
        group.post("share-links") { request, context -> EditedResponse<ShareLinkBody> in
            let form = try await body.decode(ShareLinkForm.self, from: request, context: context)
            let created = try await links.create(form.validated(), by: context.individual)
            return EditedResponse(
                status: .created, headers: [.location: "/api/users/share-links/\(created.link.publicId.wireString)"],
                response: ShareLinkBody(created.link, url: baseURL + "/s/" + created.token))
        }
        group.get("share-links/{linkId}") { _, context in
            let (link, views) = try await links.link(try Self.id(context), of: context.individual)
            return ShareLinkBody(link, views: views)
        }
        group.delete("share-links/{linkId}") { _, context -> HTTPResponse.Status in
            try await links.revoke(try Self.id(context), by: context.individual)
            return .noContent
        }
    }

    static func id(_ context: some RequestContext) throws -> UUID {
        return try context.parameters.id("linkId", missing: ShareLinkError.notFound)
    }
}

/// `POST /api/users/share-links`.
struct ShareLinkForm: Decodable {
    var label: String?
    var types: [String]?
    var dataFrom: String?
    var dataTo: String?
    var expiresAt: String?
    var pin: String?

    func validated(now: Date = Date()) throws -> NewShareLink {
        var fields = FieldValidator()
        let label = fields.required("label", label) { (raw: String) throws(InvalidValue) in try PersonName(parsing: raw).value }
        let types = fields.required("types", types) { (raw: [String]) throws(InvalidValue) -> [SampleType] in
            guard !raw.isEmpty else { throw InvalidValue("must name at least one data type") }
            guard raw.count <= 64 else { throw InvalidValue("may name at most 64 types") }
            var types: [SampleType] = []
            for name in raw {
                guard let type = SampleType(rawValue: name), type.hasDailyRollup else {
                    throw InvalidValue("\(name) is not a data type with daily summaries (a share link shows charts of numbers)")
                }
                if !types.contains(type) { types.append(type) }
            }
            return types
        }
        let dataFrom = fields.required("dataFrom", dataFrom, AccessScopeFields.instant)
        let dataTo = fields.required("dataTo", dataTo, AccessScopeFields.instant)
        let expiresAt = fields.required("expiresAt", expiresAt) { (raw: String) throws(InvalidValue) -> Date in
            let date = try AccessScopeFields.instant(raw)
            guard date > now else { throw InvalidValue("must be in the future") }
            guard date.timeIntervalSince(now) <= ShareLinkService.maximumLifetime else { throw InvalidValue("must be at most 30 days from now") }
            return date
        }
        let pin = fields.optional("pin", pin, SharePIN.init(parsing:))
        if let dataFrom, let dataTo {
            if dataFrom >= dataTo {
                fields.fail("dataTo", "must be later than dataFrom")
            } else if dataTo.timeIntervalSince(dataFrom) > Double(ShareLinkService.maximumWindowDays) * 86_400 {
                fields.fail("dataTo", "the window may cover at most \(ShareLinkService.maximumWindowDays) days")
            }
        }
        try fields.finish()
        return NewShareLink(label: label!, types: types!, dataFrom: dataFrom!, dataTo: dataTo!, expiresAt: expiresAt!, pin: pin)
    }
}

/// A share link as its owner sees it: `url` only in the creation's answer, `views` only in the
/// answer about one link.
struct ShareLinkBody: ResponseEncodable, Sendable {
    struct View: Encodable, Sendable {
        let at: Date
        let addressDigest: String
        let outcome: String
    }

    let id: String
    let label: String
    let types: [String]
    let dataFrom: Date
    let dataTo: Date
    let expiresAt: Date
    let pin: Bool
    /// `active`, `expired`, `revoked` or `locked` (ten wrong PINs).
    let status: String
    let createdAt: Date
    @Nullable var revokedAt: Date?
    let viewCount: Int
    @Nullable var lastViewedAt: Date?
    let url: String?
    let views: [View]?

    init(_ link: ShareLink, url: String? = nil, views: [ShareLinkView]? = nil, now: Date = Date()) {
        id = link.publicId.wireString
        label = link.label
        types = link.typeCodes.compactMap { SampleType(storageCode: $0)?.rawValue }
        dataFrom = link.dataFrom
        dataTo = link.dataTo
        expiresAt = link.expiresAt
        pin = link.hasPin
        status =
            link.revokedAt != nil ? "revoked" : link.failedPins >= ShareLinkService.pinTries ? "locked" : link.expiresAt <= now ? "expired" : "active"
        createdAt = link.createdAt
        revokedAt = link.revokedAt
        viewCount = link.views
        lastViewedAt = link.lastViewedAt
        self.url = url
        self.views = views?.map { View(at: $0.at, addressDigest: $0.addressDigest, outcome: $0.outcome.rawValue) }
    }

    private enum CodingKeys: String, CodingKey {
        case id, label, types, dataFrom, dataTo, expiresAt, pin, status, createdAt, revokedAt, viewCount, lastViewedAt, url, views
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(label, forKey: .label)
        try container.encode(types, forKey: .types)
        try container.encode(dataFrom, forKey: .dataFrom)
        try container.encode(dataTo, forKey: .dataTo)
        try container.encode(expiresAt, forKey: .expiresAt)
        try container.encode(pin, forKey: .pin)
        try container.encode(status, forKey: .status)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(revokedAt, forKey: .revokedAt)
        try container.encode(viewCount, forKey: .viewCount)
        try container.encode(lastViewedAt, forKey: .lastViewedAt)
        try container.encodeIfPresent(url, forKey: .url)
        try container.encodeIfPresent(views, forKey: .views)
    }
}
