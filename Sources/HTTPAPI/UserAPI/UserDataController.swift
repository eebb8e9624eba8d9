import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird
import Logging
import NIOCore

/// `/api/users/data`: an individual uploads samples and location fixes, and reads them back.
struct UserDataController {
    let dataManager: DataManager
    let ownData: OwnDataReader
    let body: JSONBody

    func addRoutes(to group: some RouterMethods<IndividualRequestContext>) {
        group.post("data", use: upload)
        group.get("data", use: samples)
        group.get("data/summary", use: summary)
        group.get("data/locations", use: locations)
    }

    /// `POST /api/users/data`: stores a batch of samples and fixes, committed before the answer.
    @Sendable func upload(_ request: Request, context: IndividualRequestContext) async throws -> IngestResultBody {
        guard let bytes = try await body.bytes(of: request) else { throw Problem.malformedBody("The request needs a JSON body.") }
        guard let items = try IngestUploadBody.items(in: bytes) else { throw Problem.invalidField("items", "is required") }
        guard !items.isEmpty else { throw Problem.invalidField("items", "must hold at least one item") }
        guard items.count <= DataManager.maximumBatchSize else {
            throw Problem(
                .contentTooLarge, slug: "batch-too-large", title: "Batch too large",
                detail: "An upload holds at most \(DataManager.maximumBatchSize) items; send the rest in another request."
            )
        }
        let result = try await dataManager.ingest(items, for: context.individual)
        return IngestResultBody(result)
    }

    /// `GET /api/users/data`: the individual's samples.
    @Sendable func samples(_ request: Request, context: IndividualRequestContext) async throws -> Page<SampleBody> {
        let query = try SampleListingQuery(request)
        return try await query.page(
            ownData.samples(
                of: context.individual, types: query.types, from: query.range.from, to: query.range.to,
                order: query.range.order, limit: query.range.limit, after: query.after
            ))
    }

    /// `GET data/summary?type=&from=&to=&bucket=hour|day|week`.
    @Sendable func summary(_ request: Request, context: IndividualRequestContext) async throws -> SummaryBody {
        var fields = FieldValidator()
        let query = request.uri.queryParameters
        let type = fields.required("type", query["type"].map(String.init)) { (raw: String) throws(InvalidValue) -> SampleType in
            guard let type = SampleType(rawValue: raw) else { throw InvalidValue("must be a data type such as heartRate") }
            guard type.hasDailyRollup else { throw InvalidValue("must be a quantity type; \(raw) has no summary") }
            return type
        }
        let bucket =
            fields.optional("bucket", query["bucket"].map(String.init)) { (raw: String) throws(InvalidValue) -> SummaryBucket in
                guard let bucket = SummaryBucket(rawValue: raw) else { throw InvalidValue("must be hour, day or week") }
                return bucket
            } ?? .day
        let window = TimeRangeQuery(request, fields: &fields)
        let to = window.to ?? Date()
        let defaultDays: Double =
            switch bucket {
            case .hour: 1
            case .day: 30
            case .week: 26 * 7
            }
        let from = window.from ?? to.addingTimeInterval(-defaultDays * 86_400)
        let maximumDays = OwnDataReader.maximumWindowDays(bucket)
        if from < to, to.timeIntervalSince(from) > Double(maximumDays) * 86_400 {
            fields.fail("from", "the window may cover at most \(maximumDays) days with \(bucket.rawValue) buckets")
        }
        try fields.finish()
        let summary = try await ownData.summary(of: context.individual, type: type!, bucket: bucket, from: from, to: to)
        return SummaryBody(summary)
    }

    /// `GET /api/users/data/locations`: the individual's location fixes.
    @Sendable func locations(_ request: Request, context: IndividualRequestContext) async throws -> Page<LocationFixBody> {
        let query = try LocationListingQuery(request)
        return try await query.page(
            ownData.locations(
                of: context.individual, from: query.range.from, to: query.range.to, order: query.range.order, limit: query.range.limit,
                after: query.after
            ))
    }

    /// `type=heartRate,stepCount` or `type=heartRate&type=stepCount`; none means every type.
    static func types(_ request: Request, fields: inout FieldValidator) -> [SampleType] {
        let names = request.uri.queryParameters.getAll("type").flatMap { $0.split(separator: ",").map(String.init) }
        var types: [SampleType] = []
        for name in names {
            guard let type = SampleType(rawValue: name) else {
                fields.fail("type", "must be one of \(SampleType.allCases.map(\.rawValue).joined(separator: ", "))")
                return []
            }
            if !types.contains(type) { types.append(type) }
        }
        return types
    }
}

package struct IngestUploadBody: Decodable {
    package var items: [IngestItemBody]?

    /// The items of an upload, nil when it has no `items`. The byte scanner reads the usual upload
    /// in one pass; anything unusual goes to Foundation's decoder, whose errors become problems.
    package static func items(in bytes: ByteBuffer) throws -> [RawIngestItem]? {
        if let items = UploadScanner.scan(bytes) { return items }
        do {
            return try WireFormat.decoder().decode(IngestUploadBody.self, from: Data(bytes.readableBytesView)).items?.map(\.raw)
        } catch let error as DecodingError {
            throw JSONBody.problem(for: error)
        }
    }
}

/// One uploaded item. Decoded leniently, field by field, so that one malformed item is
/// refused on its own instead of failing the whole upload.
package struct IngestItemBody: Decodable {
    package var raw = RawIngestItem()

    private enum Field: String, CodingKey {
        case id, type, value, unit, start, end, source, latitude, longitude, accuracy, altitude, time
    }

    package init(from decoder: any Decoder) throws {
        guard let container = try? decoder.container(keyedBy: Field.self) else {
            raw.fieldError = "item must be a JSON object"
            return
        }
        func read<T: Decodable>(_ field: Field, as type: T.Type, _ expectation: String) -> T? {
            do {
                return try container.decodeIfPresent(T.self, forKey: field)
            } catch {
                if raw.fieldError == nil { raw.fieldError = "\(field.rawValue) must be \(expectation)" }
                return nil
            }
        }
        raw.id = read(.id, as: String.self, "a string")
        raw.type = read(.type, as: String.self, "a string")
        raw.unit = read(.unit, as: String.self, "a string")
        raw.start = read(.start, as: String.self, "an RFC 3339 time string")
        raw.end = read(.end, as: String.self, "an RFC 3339 time string")
        raw.source = read(.source, as: String.self, "a string")
        raw.latitude = read(.latitude, as: Double.self, "a number")
        raw.longitude = read(.longitude, as: Double.self, "a number")
        raw.accuracy = read(.accuracy, as: Double.self, "a number")
        raw.altitude = read(.altitude, as: Double.self, "a number")
        raw.time = read(.time, as: String.self, "an RFC 3339 time string")
        if let number = try? container.decodeIfPresent(Double.self, forKey: .value) {
            raw.value = .number(number)
        } else if let word = try? container.decodeIfPresent(String.self, forKey: .value) {
            raw.value = .word(word)
        } else if container.contains(.value), (try? container.decodeNil(forKey: .value)) != true {
            if raw.fieldError == nil { raw.fieldError = "value must be a number (or a word for sleep)" }
        }
    }
}

/// The answer to an upload.
struct IngestResultBody: ResponseEncodable {
    struct Rejection: Encodable {
        let index: Int
        let reason: String
    }

    /// Items stored by this upload.
    let accepted: Int
    /// Valid items that were already stored (a re-sent batch).
    let duplicates: Int
    let rejected: [Rejection]

    init(_ result: IngestBatchResult) {
        accepted = result.accepted
        duplicates = result.duplicates
        rejected = result.rejected.map { Rejection(index: $0.index, reason: $0.reason) }
    }
}
