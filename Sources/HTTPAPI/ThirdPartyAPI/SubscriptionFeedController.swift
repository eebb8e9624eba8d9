import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// `GET /api/thirdparties/data?cursor=`: everything new across my active subscribed grants since
/// my cursor. `nextCursor` is the position after this page; keep it and ask again later — it is
/// null only while nothing has ever been read.
struct SubscriptionFeedController {
    let feed: SubscriptionFeed

    func addRoutes(to group: some RouterMethods<ThirdPartyRequestContext>) {
        group.get("data", use: feed)
    }

    /// `GET /api/thirdparties/data`: the feed of granted data, in the order it arrived.
    @Sendable func feed(_ request: Request, context: ThirdPartyRequestContext) async throws -> Page<FeedItemBody> {
        var fields = FieldValidator()
        let cursor = request.uri.queryParameters["cursor"].map(String.init)
        let after =
            fields.optional("cursor", cursor) { (raw: String) throws(InvalidValue) -> Int64 in
                guard let parts = CursorCodec.decode(raw, tag: "f1", fieldCount: 1), let id = Int64(parts[0]), id >= 0 else {
                    throw InvalidValue("is not a cursor of this feed")
                }
                return id
            } ?? 0
        try fields.finish()
        let page = try await feed.page(for: context.party, afterEventId: after)
        let next = page.lastEventId.map { CursorCodec.encode("f1", [String($0)]) } ?? cursor
        return Page(items: page.items.map { FeedItemBody(requestId: $0.requestId.wireString, item: $0.item) }, nextCursor: next)
    }
}

/// A feed item: the request it came under, its kind, and the sample's or fix's own fields.
struct FeedItemBody: Encodable, Sendable {
    let requestId: String
    let item: FeedItem

    private enum CodingKeys: String, CodingKey { case requestId, kind }

    func encode(to encoder: any Encoder) throws {
        switch item {
        case .sample(let sample): try SampleBody(sample).encode(to: encoder)
        case .location(let fix): try LocationFixBody(fix).encode(to: encoder)
        case .workout(let workout): try WorkoutBody(workout, detail: nil, forParty: true).encode(to: encoder)
        case .imported(let imported): try ImportedDataBody(imported).encode(to: encoder)
        }
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(requestId, forKey: .requestId)
        try container.encode(item.kindName, forKey: .kind)
    }
}

extension FeedItem {
    var kindName: String {
        switch self {
        case .sample: "sample"
        case .location: "location"
        case .workout: "workout"
        case .imported: "imported"
        }
    }
}

/// A `data.imported` item: the kind of data an import added, the span it covers within the grant
/// (read it with `…/data?type=&from=&to=` or `…/data/locations|workouts?from=&to=`), and how many
/// items when all of them lie within the grant's window.
struct ImportedDataBody: Encodable, Sendable {
    let type: String
    let from: String
    let to: String
    let count: Int64?

    init(_ imported: ImportedDataReference) {
        type = imported.kind
        from = WireFormat.timestamp(milliseconds: imported.span.firstMs)
        // `to` is exclusive, as in every listing's query: one millisecond after the last item.
        to = WireFormat.timestamp(milliseconds: imported.span.lastMs + 1)
        count = imported.count
    }

    private enum CodingKeys: String, CodingKey { case type, from, to, count }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        try container.encode(from, forKey: .from)
        try container.encode(to, forKey: .to)
        try container.encode(count, forKey: .count)
    }
}
