import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// The query string of a time-ordered listing: `from`, `to` (RFC 3339), `order` (`asc`|`desc`,
/// default newest first), `limit` (1–1000, default 100) and `cursor`.
struct TimeRangeQuery {
    static let defaultLimit = 100
    static let maximumLimit = 1000

    let from: Date?
    let to: Date?
    let order: ListingOrder
    let limit: Int
    let cursor: String?

    init(_ request: Request, fields: inout FieldValidator) {
        let query = request.uri.queryParameters
        from = fields.optional("from", query["from"].map(String.init), Self.instant)
        to = fields.optional("to", query["to"].map(String.init), Self.instant)
        order =
            fields.optional("order", query["order"].map(String.init)) { (raw: String) throws(InvalidValue) -> ListingOrder in
                guard let order = ListingOrder(rawValue: raw) else { throw InvalidValue("must be asc or desc") }
                return order
            } ?? .descending
        limit = fields.optional("limit", query["limit"].map(String.init), FieldValidator.integer(in: 1...Self.maximumLimit)) ?? Self.defaultLimit
        cursor = query["cursor"].map(String.init)
        if let from, let to, from >= to { fields.fail("to", "must be later than from") }
    }

    /// An RFC 3339 instant with its offset, as every time in a query string is written.
    static func instant(_ raw: String) throws(InvalidValue) -> Date {
        guard let date = RFC3339Timestamp.parse(raw) else {
            throw InvalidValue("must be an RFC 3339 time with an offset, such as 2026-11-21T08:30:00Z")
        }
        return date
    }
}

/// A stored sample on the wire: value in the canonical unit (a stage name for sleep).
struct SampleBody: Encodable, JSONWritable, Sendable {
    let type: String
    let value: SampleValueBody
    let unit: String?
    let startMs: Int64
    let endMs: Int64?
    let source: String?

    private enum CodingKeys: String, CodingKey { case type, value, unit, start, end, source }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        try container.encode(value, forKey: .value)
        try container.encodeIfPresent(unit, forKey: .unit)
        try container.encode(WireFormat.timestamp(milliseconds: startMs), forKey: .start)
        try container.encodeIfPresent(endMs.map { WireFormat.timestamp(milliseconds: $0) }, forKey: .end)
        try container.encodeIfPresent(source, forKey: .source)
    }

    /// The keys in sorted order, as `WireFormat.encoder()` writes them.
    func write(to output: inout JSONOutput) {
        output.raw("{")
        if let endMs {
            output.raw(#""end":"#)
            output.timestamp(milliseconds: endMs)
            output.raw(",")
        }
        if let source {
            output.raw(#""source":"#)
            output.string(source)
            output.raw(",")
        }
        output.raw(#""start":"#)
        output.timestamp(milliseconds: startMs)
        output.raw(#","type":"#)
        output.string(type)
        if let unit {
            output.raw(#","unit":"#)
            output.string(unit)
        }
        output.raw(#","value":"#)
        switch value {
        case .number(let number): output.number(number)
        case .word(let word): output.string(word)
        }
        output.raw("}")
    }
}

enum SampleValueBody: Encodable, Sendable {
    case number(Double)
    case word(String)

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .number(let number): try container.encode(number)
        case .word(let word): try container.encode(word)
        }
    }
}

/// A stored location fix on the wire.
struct LocationFixBody: Encodable, JSONWritable, Sendable {
    let latitude: Double
    let longitude: Double
    let accuracy: Double?
    let altitude: Double?
    let timeMs: Int64

    private enum CodingKeys: String, CodingKey { case latitude, longitude, accuracy, altitude, time }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(latitude, forKey: .latitude)
        try container.encode(longitude, forKey: .longitude)
        try container.encodeIfPresent(accuracy, forKey: .accuracy)
        try container.encodeIfPresent(altitude, forKey: .altitude)
        try container.encode(WireFormat.timestamp(milliseconds: timeMs), forKey: .time)
    }

    /// The keys in sorted order, as `WireFormat.encoder()` writes them.
    func write(to output: inout JSONOutput) {
        output.raw("{")
        if let accuracy {
            output.raw(#""accuracy":"#)
            output.number(accuracy)
            output.raw(",")
        }
        if let altitude {
            output.raw(#""altitude":"#)
            output.number(altitude)
            output.raw(",")
        }
        output.raw(#""latitude":"#)
        output.number(latitude)
        output.raw(#","longitude":"#)
        output.number(longitude)
        output.raw(#","time":"#)
        output.timestamp(milliseconds: timeMs)
        output.raw("}")
    }
}

extension SampleBody {
    init(_ sample: StoredSample) {
        type = sample.type.rawValue
        if let stage = sample.sleepStage {
            value = .word(stage.rawValue)
            unit = nil
        } else {
            value = .number(sample.value)
            if case .quantity(let canonical, _, _) = sample.type.definition { unit = canonical } else { unit = nil }
        }
        startMs = sample.position.startMs
        endMs = sample.endMs
        source = sample.source
    }
}

extension LocationFixBody {
    init(_ fix: StoredLocationFix) {
        latitude = fix.latitude
        longitude = fix.longitude
        accuracy = fix.accuracy
        altitude = fix.altitude
        timeMs = fix.position.timeMs
    }
}

/// Cursors of the own-data listings: the order they were made for and the last item's position.
enum OwnDataCursor {
    static func encode(_ position: SamplePosition, order: ListingOrder) -> String {
        CursorCodec.encode("s1", [order.rawValue, String(position.startMs), String(position.type), String(position.key)])
    }

    static func decodeSample(_ cursor: String, order: ListingOrder) throws(InvalidValue) -> SamplePosition {
        guard let fields = CursorCodec.decode(cursor, tag: "s1", fieldCount: 4), fields[0] == order.rawValue,
            let start = Int64(fields[1]), let type = Int16(fields[2]), let key = Int64(fields[3])
        else { throw InvalidValue("is not a cursor of this listing (cursors keep the order they were made with)") }
        return SamplePosition(startMs: start, type: type, key: key)
    }

    static func encode(_ position: (timeMs: Int64, key: Int64), order: ListingOrder) -> String {
        CursorCodec.encode("l1", [order.rawValue, String(position.timeMs), String(position.key)])
    }

    static func decodeLocation(_ cursor: String, order: ListingOrder) throws(InvalidValue) -> (timeMs: Int64, key: Int64) {
        guard let fields = CursorCodec.decode(cursor, tag: "l1", fieldCount: 3), fields[0] == order.rawValue,
            let time = Int64(fields[1]), let key = Int64(fields[2])
        else { throw InvalidValue("is not a cursor of this listing (cursors keep the order they were made with)") }
        return (time, key)
    }
}

/// A summary on the wire: bucket starts in the individual's time zone, with its offset.
struct SummaryBody: ResponseEncodable {
    struct Bucket: Encodable {
        let start: String
        let count: Int
        let min: Double
        let max: Double
        let mean: Double
        let sum: Double?
    }

    let type: String
    let unit: String?
    let bucket: String
    let timeZone: String
    let items: [Bucket]

    init(_ summary: OwnDataSummary) {
        type = summary.type.rawValue
        if case .quantity(let canonical, _, _) = summary.type.definition { unit = canonical } else { unit = nil }
        bucket = summary.bucket.rawValue
        timeZone = summary.timeZone
        let local = Date.ISO8601FormatStyle(timeZoneSeparator: .colon, timeZone: TimeZone(identifier: summary.timeZone) ?? .gmt)
        items = summary.buckets.map { stats in
            Bucket(
                start: stats.start.formatted(local),
                count: stats.count, min: stats.minimum, max: stats.maximum, mean: stats.mean, sum: stats.sum
            )
        }
    }
}

/// The query of a sample listing — window, order, limit, `type`, cursor — and the page it makes.
/// Shared by the individual's own listing and a party's reads of a grant.
struct SampleListingQuery {
    let range: TimeRangeQuery
    let types: [SampleType]
    let after: SamplePosition?

    init(_ request: Request) throws {
        var fields = FieldValidator()
        let range = TimeRangeQuery(request, fields: &fields)
        types = UserDataController.types(request, fields: &fields)
        after = fields.optional("cursor", range.cursor) { (raw: String) throws(InvalidValue) in
            try OwnDataCursor.decodeSample(raw, order: range.order)
        }
        self.range = range
        try fields.finish()
    }

    func page(_ page: ListingPage<StoredSample, SamplePosition>) -> Page<SampleBody> {
        Page(items: page.items.map(SampleBody.init), nextCursor: page.next.map { OwnDataCursor.encode($0, order: range.order) })
    }
}

/// The query of a location listing and the page it makes.
struct LocationListingQuery {
    let range: TimeRangeQuery
    let after: (timeMs: Int64, key: Int64)?

    init(_ request: Request) throws {
        var fields = FieldValidator()
        let range = TimeRangeQuery(request, fields: &fields)
        after = fields.optional("cursor", range.cursor) { (raw: String) throws(InvalidValue) in
            try OwnDataCursor.decodeLocation(raw, order: range.order)
        }
        self.range = range
        try fields.finish()
    }

    func page(_ page: ListingPage<StoredLocationFix, (timeMs: Int64, key: Int64)>) -> Page<LocationFixBody> {
        Page(items: page.items.map(LocationFixBody.init), nextCursor: page.next.map { OwnDataCursor.encode($0, order: range.order) })
    }
}
