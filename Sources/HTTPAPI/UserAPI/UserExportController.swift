import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird
import Logging
import NIOCore
import RunEvents
import SOSManager

/// `GET /api/users/export`: everything the platform holds about me, as NDJSON streamed page by
/// page (GDPR art. 20). Memory stays bounded by one page whatever the size of the history.
///
/// Lines: one `profile`, my AutomatedSOS settings (`sos`, once set: contacts and medical notes
/// are mine too), then every `sample` and `location` oldest first, every `workout` (latest
/// first; its route and heart rate are the samples and locations above), every `request` naming
/// me (the consents I gave or refused), every `offer` I made, every `shareLink` with its openings,
/// every `aggregateAnswer` that counted me, every `disclosure` of my data, every SOS `incident`, every
/// Track4Run event I organise or run in (`run`), my `enrolment` in each with my runner's state, my
/// stored positions (`runPosition`), then `end` with the counts, so a client can tell a complete
/// export from one cut short by a broken connection.
///
/// The history is read from the database `sources` picks for each export: with a read replica,
/// the replica once it has replayed the primary's latest writes (so an export just after an
/// upload holds it), else the primary.
struct UserExportController {
    let accounts: IndividualAccounts
    let sos: SOSSettingsService
    /// The readers of one export (the application picks the database they read from).
    let sources: @Sendable () async -> ExportSource

    func addRoutes(to group: some RouterMethods<IndividualRequestContext>) {
        group.get("export", use: export)
    }

    @Sendable func export(_ request: Request, context: IndividualRequestContext) async throws -> Response {
        let individual = context.individual
        let profile = try await accounts.profile(of: individual)
        let sosSettings = try await sos.settings(of: individual)
        let source = await sources()
        let logger = context.logger
        let body = ResponseBody { writer in
            var lines = ExportLines()
            do {
                try await lines.write("profile", IndividualProfileBody(profile), to: &writer)
                if let updatedAt = sosSettings.updatedAt {
                    try await lines.write("sos", SOSSettingsBody(sosSettings.settings, updatedAt: updatedAt), to: &writer)
                }
                try await source.writeHistory(of: individual, as: &lines, to: &writer)
                try await lines.writeEnd(to: &writer)
            } catch {
                // Headers are gone already: end the stream without its `end` line.
                logger.error("export stopped before its end", metadata: ["error.type": "\(type(of: error))"])
            }
            try await writer.finish(nil)
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: "application/x-ndjson",
                .contentDisposition: #"attachment; filename="data4help-export.ndjson""#,
                .cacheControl: "no-store",
            ],
            body: body
        )
    }
}

/// The export's NDJSON lines as they are written, with the counts its `end` line reports.
struct ExportLines {
    private let encoder = WireFormat.encoder()
    var samples = 0, locations = 0, runPositions = 0

    /// One line of `kind`.
    func write(_ kind: String, _ record: some Encodable, to writer: inout any ResponseBodyWriter) async throws {
        try await writer.write(line(ExportLine(kind: kind, record: record)))
    }

    /// A page of records, one line each, written at once; `counted` is the `end` line's count it adds to.
    mutating func write<Item>(
        _ kind: String, page: [Item], counted: WritableKeyPath<ExportLines, Int>? = nil, to writer: inout any ResponseBodyWriter,
        record: (Item) -> some Encodable
    ) async throws {
        var buffer = ByteBuffer()
        for item in page { buffer.writeImmutableBuffer(try line(ExportLine(kind: kind, record: record(item)))) }
        if let counted { self[keyPath: counted] += page.count }
        try await writer.write(buffer)
    }

    /// Every page `fetch` gives, newest first by `cursor`, `limit` at a time.
    mutating func writePages<Item, Cursor>(
        _ kind: String, limit: Int = 500, counted: WritableKeyPath<ExportLines, Int>? = nil, to writer: inout any ResponseBodyWriter,
        fetch: (_ before: Cursor?, _ limit: Int) async throws -> [Item], cursor: (Item) -> Cursor, record: (Item) -> some Encodable
    ) async throws {
        var before: Cursor?
        repeat {
            let page = try await fetch(before, limit)
            try await write(kind, page: page, counted: counted, to: &writer, record: record)
            before = page.count == limit ? page.last.map(cursor) : nil
        } while before != nil
    }

    /// The last line of a complete export.
    func writeEnd(to writer: inout any ResponseBodyWriter) async throws {
        try await writer.write(line(ExportEnd(samples: samples, locations: locations, runPositions: runPositions)))
    }

    private func line(_ value: some Encodable) throws -> ByteBuffer {
        var data = try encoder.encode(value)
        data.append(UInt8(ascii: "\n"))
        return ByteBuffer(bytes: data)
    }
}

/// The readers of an export's history, over the database it reads from.
struct ExportSource {
    let ownData: OwnDataReader
    let requests: AccessRequestService
    let accessLog: AccessLog
    let incidents: SOSIncidentService
    let runs: RunEventService
    let runPositions: LivePositions
    let workouts: WorkoutService
    let offers: OfferService
    let privacy: PrivacyRecordService

    /// Everything of the individual's history, in the order the export documents.
    func writeHistory(of individual: IndividualID, as lines: inout ExportLines, to writer: inout any ResponseBodyWriter) async throws {
        try await ownData.forEachSamplePage(of: individual) { page in
            try await lines.write("sample", page: page, counted: \.samples, to: &writer, record: SampleBody.init)
        }
        try await ownData.forEachLocationPage(of: individual) { page in
            try await lines.write("location", page: page, counted: \.locations, to: &writer, record: LocationFixBody.init)
        }
        try await lines.writePages(
            "workout", to: &writer, fetch: { try await workouts.list(of: individual, limit: $1, before: $0) },
            cursor: \.sequence, record: { WorkoutBody($0, detail: nil) }
        )
        try await lines.writePages(
            "request", to: &writer, fetch: { try await requests.requests(for: individual, status: nil, beforeId: $0, limit: $1) },
            cursor: \.record.id, record: { AccessRequestBody($0, for: .individual) }
        )
        for offer in try await offers.offers(of: individual) {
            try await lines.write("offer", OfferBody(offer, for: .individual), to: &writer)
        }
        for (link, views) in try await privacy.shareLinks(of: individual) {
            try await lines.write("shareLink", ShareLinkBody(link, views: views), to: &writer)
        }
        for answer in try await privacy.aggregateAnswers(of: individual) {
            try await lines.write("aggregateAnswer", PrivacyRecordBody.Answer(answer), to: &writer)
        }
        try await lines.writePages(
            "disclosure", to: &writer, fetch: { try await accessLog.entries(for: individual, beforeId: $0, limit: $1) },
            cursor: \.id, record: DisclosureBody.init
        )
        try await lines.writePages(
            "incident", to: &writer, fetch: { try await incidents.incidents(of: individual, before: $0, limit: $1) },
            cursor: \.sequence, record: SOSIncidentBody.init
        )
        try await lines.writePages(
            "run", to: &writer, fetch: { try await runs.events(of: individual, role: nil, before: $0, limit: $1) },
            cursor: \.sequence, record: RunEventBody.init
        )
        for enrolment in try await runPositions.enrolments(of: individual) {
            try await lines.write("enrolment", ExportEnrolmentBody(enrolment), to: &writer)
            try await lines.writePages(
                "runPosition", counted: \.runPositions, to: &writer,
                fetch: {
                    try await runPositions.replay(of: enrolment.runId, runner: enrolment.state.runnerId, from: nil, to: nil, after: $0, limit: $1)
                },
                cursor: { ($0.position.timeMs, $0.runnerId) }, record: { ExportRunPositionBody(runId: enrolment.runId, $0) }
            )
        }
    }
}

/// One NDJSON line: its kind and the record, flattened (`{"kind":"sample","type":…}`).
struct ExportLine<Record: Encodable>: Encodable {
    let kind: String
    let record: Record

    private enum CodingKeys: String, CodingKey { case kind }

    func encode(to encoder: any Encoder) throws {
        try record.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
    }
}

/// The last line of a complete export.
struct ExportEnd: Encodable {
    let kind = "end"
    let complete = true
    let samples: Int
    let locations: Int
    let runPositions: Int
}

/// My enrolment in a run event: my runner (what spectators saw) and where my run stands.
struct ExportEnrolmentBody: Encodable {
    let runId: String
    let runnerId: String
    let displayName: String
    let enrolledAt: Date
    let firstFixAt: Date?
    let lastFixAt: Date?
    let distanceMeters: Double
    let offCourse: Bool
    let finishedAt: Date?
    let droppedFixes: Int

    init(_ enrolment: (runId: UUID, enrolledAt: Date, state: RunnerStateRecord)) {
        let state = enrolment.state
        runId = enrolment.runId.wireString
        runnerId = state.runnerId.wireString
        displayName = state.displayName
        enrolledAt = enrolment.enrolledAt
        firstFixAt = state.firstFixAt
        lastFixAt = state.lastFixAt
        distanceMeters = state.distanceMeters
        offCourse = state.offCourse
        finishedAt = state.finishedAt
        droppedFixes = state.droppedFixes
    }
}

/// One of my stored positions in a run event, as replay shows it, with the event.
struct ExportRunPositionBody: Encodable {
    let runId: String
    let position: ReplayPositionBody

    init(runId: UUID, _ row: (runnerId: UUID, position: RunPositionRecord)) {
        self.runId = runId.wireString
        position = ReplayPositionBody(row)
    }

    private enum CodingKeys: String, CodingKey { case runId }

    func encode(to encoder: any Encoder) throws {
        try position.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(runId, forKey: .runId)
    }
}
