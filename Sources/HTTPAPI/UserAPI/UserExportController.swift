import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation
import HealthSharing
import Hummingbird
import RunEvents
import SOSManager
import Logging
import NIOCore

/// `GET /api/users/export`: everything the platform holds about me, as NDJSON streamed page by
/// page (GDPR art. 20). Memory stays bounded by one page whatever the size of the history.
///
/// Lines: one `profile`, my AutomatedSOS settings (`sos`, once set: contacts and medical notes
/// are mine too), then every `sample` and `location` oldest first, every `request` naming
/// me (the consents I gave or refused), every `disclosure` of my data, every SOS `incident`, every
/// Track4Run event I organise or run in (`run`), my `enrolment` in each with my runner's state, my
/// stored positions (`runPosition`), then `end` with the counts, so a client can tell a complete
/// export from one cut short by a broken connection.
///
/// The history is read from the database `readers` picks for each export: with a read replica,
/// the replica once it has replayed the primary's latest writes (so an export just after an
/// upload holds it), else the primary.
struct UserExportController {
    let accounts: IndividualAccounts
    let sos: SOSSettingsService
    let readers: @Sendable () async -> Database

    func addRoutes(to group: some RouterMethods<IndividualRequestContext>) {
        group.get("export") { _, context in
            let principal = context.individual
            let profile = try await accounts.profile(of: principal)
            let sosSettings = try await sos.settings(of: principal)
            let source = ExportSource(database: await readers())
            let (ownData, requests, accessLog) = (source.ownData, source.requests, source.accessLog)
            let (incidents, runs, runPositions) = (source.incidents, source.runs, source.runPositions)
            let logger = context.logger
            let body = ResponseBody { writer in
                let encoder = WireFormat.encoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                func line(_ value: some Encodable) throws -> ByteBuffer {
                    var data = try encoder.encode(value)
                    data.append(UInt8(ascii: "\n"))
                    return ByteBuffer(bytes: data)
                }
                var samples = 0, locations = 0, positions = 0
                do {
                    try await writer.write(line(ExportLine(kind: "profile", record: IndividualProfileBody(profile))))
                    if let updatedAt = sosSettings.updatedAt {
                        try await writer.write(line(ExportLine(kind: "sos", record: SOSSettingsBody(sosSettings.settings, updatedAt: updatedAt))))
                    }
                    try await ownData.forEachSamplePage(of: principal) { page in
                        var buffer = ByteBuffer()
                        for sample in page { buffer.writeImmutableBuffer(try line(ExportLine(kind: "sample", record: SampleBody(sample)))) }
                        samples += page.count
                        try await writer.write(buffer)
                    }
                    try await ownData.forEachLocationPage(of: principal) { page in
                        var buffer = ByteBuffer()
                        for fix in page { buffer.writeImmutableBuffer(try line(ExportLine(kind: "location", record: LocationFixBody(fix)))) }
                        locations += page.count
                        try await writer.write(buffer)
                    }
                    var before: Int64?
                    repeat {
                        let page = try await requests.requests(for: principal, status: nil, beforeId: before, limit: 500)
                        var buffer = ByteBuffer()
                        for request in page { buffer.writeImmutableBuffer(try line(ExportLine(kind: "request", record: AccessRequestBody(request, for: .individual)))) }
                        try await writer.write(buffer)
                        before = page.count == 500 ? page.last?.record.id : nil
                    } while before != nil
                    repeat {
                        let page = try await accessLog.entries(for: principal, beforeId: before, limit: 500)
                        var buffer = ByteBuffer()
                        for entry in page { buffer.writeImmutableBuffer(try line(ExportLine(kind: "disclosure", record: DisclosureBody(entry)))) }
                        try await writer.write(buffer)
                        before = page.count == 500 ? page.last?.id : nil
                    } while before != nil
                    repeat {
                        let page = try await incidents.incidents(of: principal, before: before, limit: 500)
                        var buffer = ByteBuffer()
                        for incident in page { buffer.writeImmutableBuffer(try line(ExportLine(kind: "incident", record: SOSIncidentBody(incident)))) }
                        try await writer.write(buffer)
                        before = page.count == 500 ? page.last?.sequence : nil
                    } while before != nil
                    var beforeRun: Int64?
                    repeat {
                        let page = try await runs.events(of: principal, role: nil, before: beforeRun, limit: 500)
                        var buffer = ByteBuffer()
                        for event in page { buffer.writeImmutableBuffer(try line(ExportLine(kind: "run", record: RunEventBody(event)))) }
                        try await writer.write(buffer)
                        beforeRun = page.count == 500 ? page.last?.sequence : nil
                    } while beforeRun != nil
                    for enrolment in try await runPositions.enrolments(of: principal) {
                        try await writer.write(line(ExportLine(kind: "enrolment", record: ExportEnrolmentBody(enrolment))))
                        var after: (timeMs: Int64, runnerId: UUID)?
                        repeat {
                            let page = try await runPositions.replay(of: enrolment.runId, runner: enrolment.state.runnerId, from: nil, to: nil, after: after, limit: 500)
                            var buffer = ByteBuffer()
                            for row in page {
                                buffer.writeImmutableBuffer(try line(ExportLine(kind: "runPosition", record: ExportRunPositionBody(runId: enrolment.runId, row))))
                            }
                            positions += page.count
                            try await writer.write(buffer)
                            after = page.count == 500 ? page.last.map { ($0.position.timeMs, $0.runnerId) } : nil
                        } while after != nil
                    }
                    try await writer.write(line(ExportEnd(samples: samples, locations: locations, runPositions: positions)))
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
}

/// The readers of an export's history, over the database it reads from.
struct ExportSource {
    let ownData: OwnDataReader
    let requests: AccessRequestService
    let accessLog: AccessLog
    let incidents: SOSIncidentService
    let runs: RunEventService
    let runPositions: LivePositions

    init(database: Database) {
        ownData = OwnDataReader(database: database)
        requests = AccessRequestService(database: database)
        accessLog = AccessLog(database: database)
        incidents = SOSIncidentService(database: database)
        runs = RunEventService(database: database)
        runPositions = LivePositions(database: database)
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
