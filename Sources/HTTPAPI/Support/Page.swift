import AccessManager
import Data4HelpCore
import Foundation
import Hummingbird
import Logging

/// One page of a listing. Every paginated response in the API has this shape;
/// `nextCursor` is null on the last page.
///
/// A page of items that write themselves (`JSONWritable`) is written straight into the response
/// buffer; any other through the response encoder. Both give the same bytes.
struct Page<Item: Encodable & Sendable>: Encodable, ResponseGenerator, Sendable {
    let items: [Item]
    let nextCursor: String?

    func response(from request: Request, context: some RequestContext) throws -> Response {
        if let written = (self as? any WrittenPage)?.written() { return Response.json(written) }
        return try context.responseEncoder.encode(self, from: request, context: context)
    }

    private enum CodingKeys: String, CodingKey { case items, nextCursor }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(items, forKey: .items)
        try container.encode(nextCursor, forKey: .nextCursor)  // explicit null, not an absent key
    }
}

/// A page whose items write themselves.
protocol WrittenPage {
    func written() -> ByteBuffer
}

extension Page: WrittenPage where Item: JSONWritable {
    func written() -> ByteBuffer {
        var output = JSONOutput(capacity: 64 + 160 * items.count)
        output.raw(#"{"items":["#)
        for (index, item) in items.enumerated() {
            if index > 0 { output.raw(",") }
            item.write(to: &output)
        }
        output.raw(#"],"nextCursor":"#)
        if let nextCursor { output.string(nextCursor) } else { output.null() }
        output.raw("}")
        return ByteBuffer(bytes: output.bytes)
    }
}

/// Keyset pagination over a descending internal id: `limit` and an opaque `cursor` from the
/// query string. Stable under concurrent inserts (no OFFSET), never shows the id itself.
struct KeysetPagination {
    static let defaultLimit = 50
    static let maximumLimit = 200

    let limit: Int
    /// Items strictly older than this id; nil for the first page.
    let beforeId: Int64?

    init(_ request: Request) throws(Problem) {
        var fields = FieldValidator()
        let query = request.uri.queryParameters
        limit = fields.optional("limit", query["limit"].map(String.init), FieldValidator.integer(in: 1...Self.maximumLimit)) ?? Self.defaultLimit
        beforeId = fields.optional("cursor", query["cursor"].map(String.init)) { (raw: String) throws(InvalidValue) -> Int64 in
            guard let id = Self.decodeCursor(raw) else { throw InvalidValue("is not a cursor this server issued") }
            return id
        }
        try fields.finish()
    }

    /// The page for rows fetched with `limit + 1`: the extra row only says that more exist.
    func page<Row, Item>(_ rows: [Row], id: (Row) -> Int64, item: (Row) -> Item) -> Page<Item> {
        page(Array(rows.prefix(limit)), more: rows.count > limit, id: id, item: item)
    }

    /// A page of `visible` rows (at most `limit`), with a cursor when the caller knows of `more`.
    func page<Row, Item>(_ visible: [Row], more: Bool, id: (Row) -> Int64, item: (Row) -> Item) -> Page<Item> {
        let next = more ? visible.last.map { Self.encodeCursor(id($0)) } : nil
        return Page(items: visible.map(item), nextCursor: next)
    }

    static func encodeCursor(_ id: Int64) -> String {
        CursorCodec.encode("k1", [String(id)])
    }

    static func decodeCursor(_ cursor: String) -> Int64? {
        CursorCodec.decode(cursor, tag: "k1", fieldCount: 1).flatMap { Int64($0[0]) }.flatMap { $0 > 0 ? $0 : nil }
    }
}
