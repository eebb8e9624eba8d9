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
        group.get("data/glucose", use: glucose)
        group.get("data/locations", use: locations)
    }

    /// `POST /api/users/data`: stores a batch of samples and fixes, committed before the answer.
    @Sendable func upload(_ request: Request, context: IndividualRequestContext) async throws -> IngestResultBody {
        guard let bytes = try await body.bytes(of: request) else { throw Problem.malformedBody("The request needs a JSON body.") }
        guard let upload = try IngestUploadBody.upload(in: bytes) else { throw Problem.invalidField("items", "is required (or series)") }
        guard upload.readings > 0 else {
            throw upload.hasSeries
                ? Problem.invalidField("series", "must hold at least one series") : Problem.invalidField("items", "must hold at least one item")
        }
        guard upload.readings <= DataManager.maximumBatchSize else { throw IngestUploadBody.batchTooLarge }
        let result = try await dataManager.ingest(upload, for: context.individual)
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

    /// `GET data/glucose?from=&to=&low=&high=`: the CGM consensus figures of the caller's blood
    /// glucose (default: the last 14 days; the range of their glucose rule, else 70–180 mg/dL).
    @Sendable func glucose(_ request: Request, context: IndividualRequestContext) async throws -> GlucoseReportBody {
        var fields = FieldValidator()
        let query = request.uri.queryParameters
        let window = TimeRangeQuery(request, fields: &fields)
        let bound = { (raw: String) throws(InvalidValue) -> Double in
            guard let value = Double(raw), value.isFinite, (10...1_500).contains(value) else {
                throw InvalidValue("must be a number of mg/dL from 10 to 1500")
            }
            return value
        }
        let low = fields.optional("low", query["low"].map(String.init), bound)
        let high = fields.optional("high", query["high"].map(String.init), bound)
        if (query["low"] == nil) != (query["high"] == nil) {
            fields.fail(query["low"] == nil ? "low" : "high", "is required with \(query["low"] == nil ? "high" : "low")")
        }
        if let low, let high, low >= high { fields.fail("high", "must be above low") }
        let to = window.to ?? Date()
        let from = window.from ?? to.addingTimeInterval(-14 * 86_400)
        if from < to, to.timeIntervalSince(from) > Double(OwnDataReader.maximumGlucoseDays) * 86_400 {
            fields.fail("from", "the window may cover at most \(OwnDataReader.maximumGlucoseDays) days")
        }
        try fields.finish()
        let range = low.flatMap { low in high.map { (low, $0) } }
        return GlucoseReportBody(try await ownData.glucoseReport(of: context.individual, from: from, to: to, range: range), from: from, to: to)
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
    package var series: [IngestSeriesBody]?

    /// The upload's items and series, nil when it has neither. The byte scanner reads the usual
    /// upload in one pass; anything unusual goes to Foundation's decoder, whose errors become
    /// problems.
    package static func upload(in bytes: ByteBuffer) throws -> RawUpload? {
        switch UploadScanner.read(bytes) {
        case .upload(let upload): return upload
        case .tooMany: throw batchTooLarge
        case .unusual: break
        }
        // Counted before Foundation builds its tree of the body: see `UploadReadingCount`.
        guard let readings = UploadReadingCount.count(bytes) else { throw Problem.malformedBody("The body is not valid JSON.") }
        guard readings <= DataManager.maximumBatchSize else { throw batchTooLarge }
        do {
            return try WireFormat.decoder().decode(IngestUploadBody.self, from: Data(bytes.readableBytesView)).raw
        } catch let error as DecodingError {
            throw JSONBody.problem(for: error)
        }
    }

    /// The answer to an upload of more than `DataManager.maximumBatchSize` readings.
    static var batchTooLarge: Problem {
        Problem(
            .contentTooLarge, slug: "batch-too-large", title: "Batch too large",
            detail: "An upload holds at most \(DataManager.maximumBatchSize) items and series values; send the rest in another request."
        )
    }

    /// As the rules read it; nil when it has neither items nor series.
    package var raw: RawUpload? {
        guard items != nil || series != nil else { return nil }
        return RawUpload(items: items?.map(\.raw) ?? [], series: series?.map(\.raw) ?? [], hasSeries: series != nil)
    }
}

/// One uploaded series, decoded leniently: a field of the wrong JSON type refuses the series
/// alone (the first such field in the order below), not the upload.
package struct IngestSeriesBody: Decodable {
    package var raw = RawSeries()

    private enum Field: String, CodingKey {
        case type, unit, start, source, intervalMs, values
    }

    package init(from decoder: any Decoder) throws {
        guard var fields = LenientFields<Field>(decoder) else {
            raw.fieldError = "series must be a JSON object"
            return
        }
        raw.type = fields.read(.type, as: String.self, "a string")
        raw.unit = fields.read(.unit, as: String.self, "a string")
        raw.start = fields.read(.start, as: String.self, "an RFC 3339 time string").map { RawInstant($0) }
        raw.source = fields.read(.source, as: String.self, "a string")
        raw.intervalMs = fields.read(.intervalMs, as: Double.self, "a number")
        raw.values = fields.read(.values, as: [Double?].self, "an array of numbers (null for an empty slot)")
        raw.fieldError = fields.problem
    }
}

/// A JSON object read field by field, leniently: a field of the wrong JSON type reads as absent,
/// and the first such field's problem is kept (`problem`).
struct LenientFields<Key: CodingKey> {
    let container: KeyedDecodingContainer<Key>
    var problem: String?

    /// Nil when the value is not an object.
    init?(_ decoder: any Decoder) {
        guard let container = try? decoder.container(keyedBy: Key.self) else { return nil }
        self.container = container
    }

    mutating func read<T: Decodable>(_ key: Key, as type: T.Type, _ expectation: String) -> T? {
        do {
            return try container.decodeIfPresent(T.self, forKey: key)
        } catch {
            if problem == nil { problem = "\(key.stringValue) must be \(expectation)" }
            return nil
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
        guard var fields = LenientFields<Field>(decoder) else {
            raw.fieldError = "item must be a JSON object"
            return
        }
        raw.id = fields.read(.id, as: String.self, "a string")
        raw.type = fields.read(.type, as: String.self, "a string").map { RawSampleType($0) }
        raw.unit = fields.read(.unit, as: String.self, "a string")
        raw.start = fields.read(.start, as: String.self, "an RFC 3339 time string").map { RawInstant($0) }
        raw.end = fields.read(.end, as: String.self, "an RFC 3339 time string").map { RawInstant($0) }
        raw.source = fields.read(.source, as: String.self, "a string")
        raw.latitude = fields.read(.latitude, as: Double.self, "a number")
        raw.longitude = fields.read(.longitude, as: Double.self, "a number")
        raw.accuracy = fields.read(.accuracy, as: Double.self, "a number")
        raw.altitude = fields.read(.altitude, as: Double.self, "a number")
        raw.time = fields.read(.time, as: String.self, "an RFC 3339 time string").map { RawInstant($0) }
        let container = fields.container
        if let number = try? container.decodeIfPresent(Double.self, forKey: .value) {
            raw.value = .number(number)
        } else if let word = try? container.decodeIfPresent(String.self, forKey: .value) {
            raw.value = .word(word)
        } else if container.contains(.value), (try? container.decodeNil(forKey: .value)) != true {
            fields.problem = fields.problem ?? "value must be a number (or a word for sleep)"
        }
        raw.fieldError = fields.problem
    }
}

/// The answer to an upload.
struct IngestResultBody: ResponseEncodable {
    struct Rejection: Encodable {
        let index: Int
        let pointer: String
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
        rejected = result.rejected.map { Rejection(index: $0.index, pointer: $0.pointer, reason: $0.reason) }
    }
}

/// `GET /api/users/data/glucose` (`GlucoseReport` in the OpenAPI document); shares in %, rounded
/// to 0.1, figures null without readings.
struct GlucoseReportBody: ResponseEncodable {
    struct Range: Encodable {
        let low: Double
        let high: Double
        let source: String
    }

    let from: String
    let to: String
    let unit = "mg/dL"
    let range: Range
    let readings: Int
    let firstReading: String?
    let lastReading: String?
    let mean: Double?
    let standardDeviation: Double?
    let coefficientOfVariation: Double?
    let glucoseManagementIndicator: Double?
    let timeVeryLow: Double?
    let timeBelowRange: Double?
    let timeInRange: Double?
    let timeAboveRange: Double?
    let timeVeryHigh: Double?
    let hypoEpisodes: Int

    init(_ report: GlucoseReport, from: Date, to: Date) {
        func tenth(_ value: Double?) -> Double? { value.map { ($0 * 10).rounded() / 10 } }
        self.from = WireFormat.timestamp(from)
        self.to = WireFormat.timestamp(to)
        range = Range(low: report.low, high: report.high, source: report.boundsSource.rawValue)
        readings = report.readings
        firstReading = report.first.map(WireFormat.timestamp)
        lastReading = report.last.map(WireFormat.timestamp)
        mean = tenth(report.mean)
        standardDeviation = tenth(report.standardDeviation)
        coefficientOfVariation = tenth(report.coefficientOfVariation)
        glucoseManagementIndicator = tenth(report.glucoseManagementIndicator)
        timeVeryLow = tenth(report.veryLow)
        timeBelowRange = tenth(report.belowRange)
        timeInRange = tenth(report.inRange)
        timeAboveRange = tenth(report.aboveRange)
        timeVeryHigh = tenth(report.veryHigh)
        hypoEpisodes = report.hypoEpisodes
    }

    private enum CodingKeys: String, CodingKey {
        case from, to, unit, range, readings, firstReading, lastReading, mean, standardDeviation, coefficientOfVariation,
            glucoseManagementIndicator, timeVeryLow, timeBelowRange, timeInRange, timeAboveRange, timeVeryHigh, hypoEpisodes
    }

    /// Every key, null when absent.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(from, forKey: .from)
        try container.encode(to, forKey: .to)
        try container.encode(unit, forKey: .unit)
        try container.encode(range, forKey: .range)
        try container.encode(readings, forKey: .readings)
        try container.encode(firstReading, forKey: .firstReading)
        try container.encode(lastReading, forKey: .lastReading)
        try container.encode(mean, forKey: .mean)
        try container.encode(standardDeviation, forKey: .standardDeviation)
        try container.encode(coefficientOfVariation, forKey: .coefficientOfVariation)
        try container.encode(glucoseManagementIndicator, forKey: .glucoseManagementIndicator)
        try container.encode(timeVeryLow, forKey: .timeVeryLow)
        try container.encode(timeBelowRange, forKey: .timeBelowRange)
        try container.encode(timeInRange, forKey: .timeInRange)
        try container.encode(timeAboveRange, forKey: .timeAboveRange)
        try container.encode(timeVeryHigh, forKey: .timeVeryHigh)
        try container.encode(hypoEpisodes, forKey: .hypoEpisodes)
    }
}
