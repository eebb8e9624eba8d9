import Data4HelpCore
import DeviceFiles
import Foundation
import Hummingbird
import RunEvents

/// `/me/runs`: the Track4Run events I organise, and the course editor — a new event or a change
/// of one before it starts: the course drawn on the map (click to add a point, drag one to move
/// it, the length shown as it changes) or read from a GPX, TCX or FIT file, then saved through the
/// API's own validation (`RunEventForm`).
struct MeRunPages {
    let site: PortalSite
    let runs: RunEventService
    /// The largest course file the editor reads (the API's own body limit applies as well).
    static let courseFileLimit = 16 << 20

    func addRoutes(to group: some RouterMethods<AppRequestContext>) {
        group.get("runs") { _, context in
            let mine = try await runs.events(of: try context.signedInIndividual(), role: .organiser, before: nil, limit: 200)
            return try await site.page(
                "me-runs", title: "My run events", context, values: ["events": mine.map(Self.shown), "hasEvents": !mine.isEmpty])
        }
        group.get("runs/new") { _, context in try await editor(context, event: nil) }
        group.post("runs/new") { request, context in
            try await site.submit(
                request, context, keeping: Self.fieldNames, showing: { try await editor($0, event: nil, values: $1, status: $2) }
            ) { form in
                let event = try await runs.create(try Self.form(form).plan(current: nil), by: try context.signedInIndividual())
                return PortalForm.redirect(to: "/me/runs/\(event.id.wireString)")
            }
        }
        group.get("runs/{runId}") { _, context in try await editor(context, event: try await organised(context)) }
        group.post("runs/{runId}") { request, context in
            let event = try await organised(context)
            return try await site.submit(
                request, context, keeping: Self.fieldNames, showing: { try await editor($0, event: event, values: $1, status: $2) }
            ) { form in
                let change = try Self.form(form)
                _ = try await runs.update(event.id, by: try context.signedInIndividual()) { try change.plan(current: $0) }
                return PortalForm.redirect(to: "/me/runs/\(event.id.wireString)")
            }
        }
        // The editor's script sends a course file (the body, its type from the file's name; the
        // form token in `X-CSRF-Token`) and draws the path it answers, to edit before saving.
        // Answered in JSON, problems too (the script shows them beside the file field).
        group.post("runs/course") { request, context -> Response in
            do {
                return try await CoursePreviewBody(try readCourse(request)).response(from: request, context: context)
            } catch {
                return ErrorMapping.problem(for: error, logger: context.logger).response(instance: request.uri.path, requestId: nil)
            }
        }
    }

    private func readCourse(_ request: Request) async throws -> GeoPath {
        guard let format = request.headers[.contentType].flatMap(ActivityFileFormat.init(contentType:)) else {
            throw Problem(
                .unsupportedMediaType, slug: "unsupported-media-type", title: "Unsupported media type",
                detail: "Send a GPX, TCX or FIT file (application/gpx+xml, application/vnd.garmin.tcx+xml, application/vnd.ant.fit).")
        }
        // Read as the API reads a course's file: within the limit, decoded if it came coded.
        let bytes = Array(try await JSONBody(limit: min(Self.courseFileLimit, site.maxBodyBytes)).collect(request).readableBytesView)
        switch Result(catching: { () throws(PathError) in try GeoPath(points: try CoursePath.points(from: bytes, format: format), field: "body") }) {
        case .success(let course): return course
        case .failure(let error): throw Problem.invalidField(error.field, error.reason)
        }
    }

    /// The event, if the signed-in individual organises it (anyone else: 404, as the API).
    private func organised(_ context: AppRequestContext) async throws -> RunEvent {
        let (event, _) = try await runs.event(try RunEventController.runId(context))
        guard event.organiserId == (try context.signedInIndividual()).rowId else { throw RunEventError.notFound }
        return event
    }

    private func editor(
        _ context: AppRequestContext, event: RunEvent?, values: [String: Any] = [:], status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        var all = values
        // The course's problems (`path.coordinates[3]`, `path.type`) show under the map.
        if var errors = values["errors"] as? [String: String],
            let pathIssue = errors.keys.sorted().first(where: { $0.hasPrefix("path") || $0 == "body" })
        {
            errors["path"] = errors[pathIssue]
            all["errors"] = errors
        }
        all["leafletPage"] = true
        all["typed"] = values["typed"] ?? event.map(Self.typed) ?? ["maxParticipants": "100"]
        all["action"] = event.map { "/me/runs/\($0.id.wireString)" } ?? "/me/runs/new"
        all["editing"] = event != nil
        if let event {
            all["event"] = ["id": event.id.wireString, "status": event.phase.rawValue, "participants": event.participantCount]
        }
        return try await site.page("me-run", title: event.map { "Edit: \($0.name)" } ?? "A new run event", context, values: all, status: status)
    }

    /// The form as the API's body: the times as the page's script wrote them (RFC 3339, from the
    /// browser's local date and time), the course as GeoJSON coordinates.
    static func form(_ form: PortalForm) throws -> RunEventForm {
        var body = RunEventForm()
        body.name = form.text("name")
        body.description = form["description"]
        (body.startsAt, body.endsAt, body.enrolmentDeadline) = (form.text("startsAt"), form.text("endsAt"), form.text("enrolmentDeadline"))
        body.maxParticipants = try form.integer("maxParticipants")
        if let path = form.text("path") {
            guard let coordinates = try? JSONDecoder().decode([[Double]].self, from: Data(path.utf8)) else {
                throw Problem.invalidField("path", "must be the course's points: draw it on the map")
            }
            body.path = RunEventForm.Path(type: "LineString", coordinates: coordinates)
        }
        return body
    }

    private static let fieldNames = ["name", "description", "startsAt", "endsAt", "enrolmentDeadline", "maxParticipants", "path"]

    private static func typed(_ event: RunEvent) -> [String: String] {
        let path = (try? JSONEncoder().encode(event.path.coordinates)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
        return [
            "name": event.name, "description": event.description, "startsAt": WireFormat.timestamp(event.startsAt),
            "endsAt": WireFormat.timestamp(event.endsAt), "enrolmentDeadline": WireFormat.timestamp(event.enrolmentDeadline),
            "maxParticipants": String(event.maxParticipants), "path": path,
        ]
    }

    private static func shown(_ event: RunEvent) -> [String: Any] {
        [
            "id": event.id.wireString, "name": event.name, "startsAt": PortalPages.shown(event.startsAt), "status": event.phase.rawValue,
            "participants": "\(event.participantCount) of \(event.maxParticipants)",
            "length": (event.path.lengthMeters / 1000).formatted(.number.precision(.fractionLength(2))) + " km",
        ]
    }
}

/// `POST /me/runs/course`'s answer: the course read from the file, for the editor.
struct CoursePreviewBody: ResponseEncodable {
    let coordinates: [[Double]]
    let lengthMeters: Double

    init(_ course: GeoPath) {
        coordinates = course.coordinates
        lengthMeters = (course.lengthMeters * 10).rounded() / 10
    }
}
