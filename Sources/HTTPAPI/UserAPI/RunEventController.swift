import AccessManager
import Data4HelpCore
import DeviceFiles
import Foundation
import HealthSharing
import Hummingbird
import NIOCore
import RunEvents

/// `/api/users/runs`: organisers create, change and cancel run events; individuals enrol.
struct RunEventController {
    let runs: RunEventService
    let body: JSONBody

    func addRoutes(to group: some RouterMethods<IndividualRequestContext>) {
        group.post("runs") { request, context -> EditedResponse<RunEventBody> in
            let plan: RunEventPlan
            if let format = request.headers[.contentType].flatMap(ActivityFileFormat.init(contentType:)) {
                let bytes = try await body.collect(request)
                plan = try RunEventForm(query: request.uri.queryParameters).plan(file: Array(bytes.readableBytesView), format: format)
            } else {
                plan = try await body.decode(RunEventForm.self, from: request, context: context).plan(current: nil)
            }
            return EditedResponse(status: .created, response: RunEventBody(try await runs.create(plan, by: context.individual)))
        }
        group.get("runs") { request, context -> Page<RunEventBody> in
            let pagination = try KeysetPagination(request)
            var fields = FieldValidator()
            let role = fields.optional("role", request.uri.queryParameters["role"].map(String.init)) {
                (raw: String) throws(InvalidValue) -> RunRole in
                guard let role = RunRole(rawValue: raw) else { throw InvalidValue("must be organiser or participant") }
                return role
            }
            try fields.finish()
            let rows = try await runs.events(of: context.individual, role: role, before: pagination.beforeId, limit: pagination.limit + 1)
            return pagination.page(rows, id: \.sequence, item: RunEventBody.init)
        }
        group.patch("runs/{runId}") { request, context in
            let form = try await body.decode(RunEventForm.self, from: request, context: context)
            return RunEventBody(try await runs.update(try Self.runId(context), by: context.individual) { try form.plan(current: $0) })
        }
        group.post("runs/{runId}/cancel") { _, context in
            RunEventBody(try await runs.cancel(try Self.runId(context), by: context.individual))
        }
        group.post("runs/{runId}/enrolment") { request, context -> EditedResponse<RunnerBody> in
            let form = try await body.decode(EnrolmentForm.self, from: request, context: context)
            guard let name = form.displayName else { throw Problem.invalidField("displayName", "is required") }
            return EditedResponse(
                status: .created, response: RunnerBody(try await runs.enrol(in: try Self.runId(context), by: context.individual, displayName: name)))
        }
        group.delete("runs/{runId}/enrolment") { _, context -> Response in
            try await runs.withdraw(from: try Self.runId(context), by: context.individual)
            return Response(status: .noContent)
        }
    }

    static func runId(_ context: some RequestContext) throws -> UUID {
        return try context.parameters.id("runId", missing: RunEventError.notFound)
    }
}

/// `/api/runs`: the public listing and an event's page data (no account needed).
struct PublicRunController {
    let runs: RunEventService

    func addRoutes(to router: some RouterMethods<AppRequestContext>) {
        router.get("api/runs") { request, _ -> Page<RunEventBody> in
            let pagination = try KeysetPagination(request)
            var fields = FieldValidator()
            let phase = fields.optional("status", request.uri.queryParameters["status"].map(String.init)) {
                (raw: String) throws(InvalidValue) -> RunPhase in
                guard let phase = RunPhase(rawValue: raw) else { throw InvalidValue("must be upcoming, live, finished or cancelled") }
                return phase
            }
            try fields.finish()
            let rows = try await runs.publicEvents(phase: phase, before: pagination.beforeId, limit: pagination.limit + 1)
            return pagination.page(rows, id: \.sequence, item: RunEventBody.init)
        }
        router.get("api/runs/{runId}") { _, context in
            let (event, runners) = try await runs.event(try RunEventController.runId(context))
            return RunEventBody(event, runners: runners)
        }
    }
}

/// `{ "displayName" }`: the name spectators will see.
struct EnrolmentForm: Decodable {
    var displayName: String?
}

/// The event as sent: every field for a creation; for a change, only those that change.
struct RunEventForm: Decodable {
    struct Path: Decodable {
        var type: String?
        var coordinates: [[Double]]?
    }

    var name: String?
    var description: String?
    var startsAt: String?
    var endsAt: String?
    var enrolmentDeadline: String?
    var maxParticipants: Int?
    var path: Path?

    init() {}

    init(query: Parameters) {
        name = query["name"].map(String.init)
        description = query["description"].map(String.init)
        startsAt = query["startsAt"].map(String.init)
        endsAt = query["endsAt"].map(String.init)
        enrolmentDeadline = query["enrolmentDeadline"].map(String.init)
        maxParticipants = query["maxParticipants"].flatMap { Int($0) }
    }

    /// A creation (no `current`) or the merged change of `current`.
    func plan(current: RunEvent?) throws -> RunEventPlan {
        var fields = FieldValidator()
        var course: GeoPath?
        if let path {
            if path.type != "LineString" { fields.fail("path.type", "must be LineString") }
            switch Result(catching: { () throws(PathError) in try GeoPath(coordinates: path.coordinates ?? []) }) {
            case .success(let parsed): course = parsed
            case .failure(let error): fields.fail(error.field, error.reason)
            }
        } else if current == nil {
            fields.fail("path", "is required (a GeoJSON LineString, or upload the course as GPX, TCX or FIT)")
        }
        return try plan(current: current, course: course ?? current?.path, fields: &fields)
    }

    /// A creation from a GPS file (GPX, TCX, FIT) as the body; the other fields come from the
    /// query string.
    func plan(file: [UInt8], format: ActivityFileFormat) throws -> RunEventPlan {
        var fields = FieldValidator()
        var course: GeoPath?
        switch Result(catching: { () throws(PathError) in try GeoPath(points: try CoursePath.points(from: file, format: format), field: "body") }) {
        case .success(let parsed): course = parsed
        case .failure(let error): fields.fail(error.field, error.reason)
        }
        return try plan(current: nil, course: course, fields: &fields)
    }

    private func plan(current: RunEvent?, course: GeoPath?, fields: inout FieldValidator) throws -> RunEventPlan {
        let creating = current == nil
        func time(_ field: String, _ raw: String?) -> Date? {
            let parse = { (text: String) throws(InvalidValue) -> Date in
                guard let date = RFC3339Timestamp.parse(text) else { throw InvalidValue("must be an RFC 3339 time such as 2026-12-01T09:00:00Z") }
                return date
            }
            return creating ? fields.required(field, raw, parse) : fields.optional(field, raw, parse)
        }
        let starts = time("startsAt", startsAt), ends = time("endsAt", endsAt), deadline = time("enrolmentDeadline", enrolmentDeadline)
        if creating, name == nil { fields.fail("name", "is required") }
        if creating, maxParticipants == nil { fields.fail("maxParticipants", "is required") }
        try fields.finish()
        guard let startsAt = starts ?? current?.startsAt, let endsAt = ends ?? current?.endsAt,
            let enrolmentDeadline = deadline ?? current?.enrolmentDeadline, let maxParticipants = maxParticipants ?? current?.maxParticipants,
            let course
        else { throw Problem.invalidField("path", "is required") }  // unreachable: the checks above name what is missing
        return try RunEventPlan(
            name: name ?? current?.name ?? "", description: description ?? current?.description ?? "", startsAt: startsAt, endsAt: endsAt,
            enrolmentDeadline: enrolmentDeadline, maxParticipants: maxParticipants, path: course
        )
    }
}

/// A run event on the wire.
struct RunEventBody: ResponseEncodable, Sendable {
    struct Path: Encodable, Sendable {
        let type = "LineString"
        let coordinates: [[Double]]
    }

    let id: String
    let name: String
    let description: String
    let status: String
    let startsAt: String
    let endsAt: String
    let enrolmentDeadline: String
    let maxParticipants: Int
    let participantCount: Int
    let lengthMeters: Double
    let path: Path
    let createdAt: String
    let updatedAt: String
    let cancelledAt: String?
    let runners: [RunnerBody]?

    init(_ event: RunEvent) {
        self.init(event, runners: nil)
    }

    init(_ event: RunEvent, runners: [RunnerRecord]?) {
        id = event.id.wireString
        name = event.name
        description = event.description
        status = event.phase.rawValue
        startsAt = WireFormat.timestamp(event.startsAt)
        endsAt = WireFormat.timestamp(event.endsAt)
        enrolmentDeadline = WireFormat.timestamp(event.enrolmentDeadline)
        maxParticipants = event.maxParticipants
        participantCount = event.participantCount
        lengthMeters = (event.path.lengthMeters * 10).rounded() / 10
        path = Path(coordinates: event.path.coordinates)
        createdAt = WireFormat.timestamp(event.createdAt)
        updatedAt = WireFormat.timestamp(event.updatedAt)
        cancelledAt = event.cancelledAt.map(WireFormat.timestamp)
        self.runners = runners?.map(RunnerBody.init)
    }

    private enum CodingKeys: String, CodingKey {
        case id, name, description, status, startsAt, endsAt, enrolmentDeadline, maxParticipants, participantCount, lengthMeters, path
        case createdAt, updatedAt, cancelledAt, runners
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(description, forKey: .description)
        try container.encode(status, forKey: .status)
        try container.encode(startsAt, forKey: .startsAt)
        try container.encode(endsAt, forKey: .endsAt)
        try container.encode(enrolmentDeadline, forKey: .enrolmentDeadline)
        try container.encode(maxParticipants, forKey: .maxParticipants)
        try container.encode(participantCount, forKey: .participantCount)
        try container.encode(lengthMeters, forKey: .lengthMeters)
        try container.encode(path, forKey: .path)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
        try container.encode(cancelledAt, forKey: .cancelledAt)
        try container.encodeIfPresent(runners, forKey: .runners)
    }
}

/// A runner as spectators see them: the name chosen at enrolment, never the account.
struct RunnerBody: ResponseEncodable, Sendable {
    let runnerId: String
    let displayName: String
    let enrolledAt: String

    init(_ runner: RunnerRecord) {
        runnerId = runner.runnerId.wireString
        displayName = runner.displayName
        enrolledAt = WireFormat.timestamp(runner.enrolledAt)
    }
}
