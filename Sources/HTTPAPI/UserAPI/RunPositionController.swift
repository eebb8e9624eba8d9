import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird
import RunEvents

/// `POST /api/users/runs/{runId}/positions`: a participant's positions during the event.
struct RunPositionController {
    let live: LivePositions
    let body: JSONBody

    struct Form: Decodable {
        struct Fix: Decodable {
            var latitude: Double?
            var longitude: Double?
            var accuracy: Double?
            var time: String?
        }

        var positions: [Fix]?
    }

    func addRoutes(to group: some RouterMethods<IndividualRequestContext>) {
        group.post("runs/{runId}/positions", use: post)
    }

    @Sendable func post(_ request: Request, context: IndividualRequestContext) async throws -> PositionBatchBody {
        let form = try await body.decode(Form.self, from: request, context: context)
        let fixes = try Self.fixes(form)
        return PositionBatchBody(try await live.record(fixes, in: try RunEventController.runId(context), by: context.individual))
    }

    /// The form's fixes, each field checked and named (`positions[2].latitude`) when it is not.
    static func fixes(_ form: Form) throws -> [PositionFix] {
        var fields = FieldValidator()
        var fixes: [PositionFix] = []
        if form.positions == nil { fields.fail("positions", "is required") }
        for (index, fix) in (form.positions ?? []).prefix(LivePositions.maximumBatch + 1).enumerated() {
            let prefix = "positions[\(index)]."
            let latitude = fields.required(prefix + "latitude", fix.latitude) { (value: Double) throws(InvalidValue) -> Double in
                guard (-90...90).contains(value) else { throw InvalidValue("must be from -90 to 90") }
                return value
            }
            let longitude = fields.required(prefix + "longitude", fix.longitude) { (value: Double) throws(InvalidValue) -> Double in
                guard (-180...180).contains(value) else { throw InvalidValue("must be from -180 to 180") }
                return value
            }
            let accuracy = fields.optional(prefix + "accuracy", fix.accuracy) { (value: Double) throws(InvalidValue) -> Double in
                guard value >= 0, value.isFinite else { throw InvalidValue("must be a non-negative number of metres") }
                return value
            }
            let time = fields.required(prefix + "time", fix.time) { (text: String) throws(InvalidValue) -> Date in
                guard let date = RFC3339Timestamp.parse(text) else { throw InvalidValue("must be an RFC 3339 time") }
                return date
            }
            if let latitude, let longitude, let time {
                fixes.append(PositionFix(latitude: latitude, longitude: longitude, accuracy: accuracy, time: time))
            }
        }
        try fields.finish()
        return fixes
    }
}

/// `GET /api/runs/{runId}/leaderboard` and `/positions`: public live data and replay.
struct PublicRunLiveController {
    let live: LivePositions

    func addRoutes(to router: some RouterMethods<AppRequestContext>) {
        router.get("api/runs/{runId}/leaderboard", use: leaderboard)
        router.get("api/runs/{runId}/positions", use: positions)
    }

    /// `GET /api/runs/{runId}/leaderboard`: every runner's latest state, ranked.
    @Sendable func leaderboard(_ request: Request, context: AppRequestContext) async throws -> Page<RunnerStateBody> {
        Page(items: try await live.leaderboard(of: try RunEventController.runId(context)).map(RunnerStateBody.init), nextCursor: nil)
    }

    /// `GET /api/runs/{runId}/positions`: the stored positions for replay, by time, one runner or all.
    @Sendable func positions(_ request: Request, context: AppRequestContext) async throws -> Page<ReplayPositionBody> {
        let query = request.uri.queryParameters
        var fields = FieldValidator()
        let runner = fields.optional("runner", query["runner"].map(String.init)) { (raw: String) throws(InvalidValue) -> UUID in
            guard let id = UUID(uuidString: raw) else { throw InvalidValue("must be a runnerId") }
            return id
        }
        let time = { (raw: String) throws(InvalidValue) -> Date in
            guard let date = RFC3339Timestamp.parse(raw) else { throw InvalidValue("must be an RFC 3339 time") }
            return date
        }
        let from = fields.optional("from", query["from"].map(String.init), time)
        let to = fields.optional("to", query["to"].map(String.init), time)
        let limit = fields.optional("limit", query["limit"].map(String.init), FieldValidator.integer(in: 1...1000)) ?? 500
        let after = fields.optional("cursor", query["cursor"].map(String.init)) {
            (raw: String) throws(InvalidValue) -> (timeMs: Int64, runnerId: UUID) in
            guard let parts = CursorCodec.decode(raw, tag: "rp", fieldCount: 2), let timeMs = Int64(parts[0]),
                let runnerId = UUID(uuidString: parts[1])
            else {
                throw InvalidValue("is not a cursor this server issued")
            }
            return (timeMs, runnerId)
        }
        try fields.finish()
        let rows = try await live.replay(
            of: try RunEventController.runId(context), runner: runner, from: from, to: to, after: after, limit: limit + 1)
        let visible = rows.prefix(limit)
        let next = rows.count > limit ? visible.last.map { CursorCodec.encode("rp", [String($0.position.timeMs), $0.runnerId.uuidString]) } : nil
        return Page(items: visible.map(ReplayPositionBody.init), nextCursor: next)
    }
}

/// The answer to a runner's post (hundreds a second at a race): written straight into bytes
/// (`JSONOutput`), the same bytes as its `Encodable` conformance through `WireFormat.encoder()`
/// (`RunPositionBodyOutputTests`), where Foundation's encoder was about 1.5 % of the machine in
/// `bench live`'s profile.
struct PositionBatchBody: Encodable, WrittenResponse {
    struct Dropped: Encodable {
        let duplicate, implausible, inaccurate, outsideRun: Int
    }

    let accepted: Int
    let dropped: Dropped
    let state: RunnerStateBody

    init(_ result: PositionBatchResult) {
        accepted = result.accepted
        dropped = Dropped(
            duplicate: result.dropped.duplicate, implausible: result.dropped.implausible, inaccurate: result.dropped.inaccurate,
            outsideRun: result.dropped.outsideRun
        )
        state = RunnerStateBody(result.state)
    }

    /// The keys in sorted order, as `WireFormat.encoder()` writes them.
    func write(to output: inout JSONOutput) {
        output.raw(#"{"accepted":"#)
        output.number(Double(accepted))
        output.raw(#","dropped":{"duplicate":"#)
        output.number(Double(dropped.duplicate))
        output.raw(#","implausible":"#)
        output.number(Double(dropped.implausible))
        output.raw(#","inaccurate":"#)
        output.number(Double(dropped.inaccurate))
        output.raw(#","outsideRun":"#)
        output.number(Double(dropped.outsideRun))
        output.raw(#"},"state":"#)
        state.write(to: &output)
        output.raw("}")
    }
}

/// A runner's live state on the wire (the WebSocket's and the leaderboard's items).
struct RunnerStateBody: Encodable, JSONWritable, Sendable {
    let state: RunnerState

    init(_ state: RunnerState) {
        self.state = state
    }

    private enum CodingKeys: String, CodingKey {
        case runnerId, displayName, latitude, longitude, time, distanceMeters, progress, paceSecondsPerKm, estimatedFinish, rank, offCourse, finished
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(state.runnerId.wireString, forKey: .runnerId)
        try container.encode(state.displayName, forKey: .displayName)
        try container.encode(state.latitude, forKey: .latitude)
        try container.encode(state.longitude, forKey: .longitude)
        try container.encode(state.time.map(WireFormat.timestamp), forKey: .time)
        try container.encode(state.distanceMeters, forKey: .distanceMeters)
        try container.encode((state.progress * 10_000).rounded() / 10_000, forKey: .progress)
        try container.encode(state.paceSecondsPerKm, forKey: .paceSecondsPerKm)
        try container.encode(state.estimatedFinish.map(WireFormat.timestamp), forKey: .estimatedFinish)
        try container.encode(state.rank, forKey: .rank)
        try container.encode(state.offCourse, forKey: .offCourse)
        try container.encode(state.finished, forKey: .finished)
    }

    /// The keys in sorted order, as `WireFormat.encoder()` writes them (a nil written as null).
    func write(to output: inout JSONOutput) {
        func number(_ value: Double?) {
            if let value { output.number(value) } else { output.null() }
        }
        func time(_ value: Date?) {
            if let value { output.string(WireFormat.timestamp(value)) } else { output.null() }
        }
        output.raw(#"{"displayName":"#)
        output.string(state.displayName)
        output.raw(#","distanceMeters":"#)
        output.number(state.distanceMeters)
        output.raw(#","estimatedFinish":"#)
        time(state.estimatedFinish)
        output.raw(state.finished ? #","finished":true,"latitude":"# : #","finished":false,"latitude":"#)
        number(state.latitude)
        output.raw(#","longitude":"#)
        number(state.longitude)
        output.raw(state.offCourse ? #","offCourse":true,"paceSecondsPerKm":"# : #","offCourse":false,"paceSecondsPerKm":"#)
        number(state.paceSecondsPerKm)
        output.raw(#","progress":"#)
        output.number((state.progress * 10_000).rounded() / 10_000)
        output.raw(#","rank":"#)
        number(state.rank.map(Double.init))
        output.raw(#","runnerId":"#)
        output.string(state.runnerId.wireString)
        output.raw(#","time":"#)
        time(state.time)
        output.raw("}")
    }
}

struct ReplayPositionBody: Encodable, Sendable {
    let runnerId: String
    let latitude: Double
    let longitude: Double
    let accuracy: Double?
    let time: String
    let distanceMeters: Double

    init(_ row: (runnerId: UUID, position: RunPositionRecord)) {
        runnerId = row.runnerId.wireString
        latitude = row.position.latitude
        longitude = row.position.longitude
        accuracy = row.position.accuracy.map(Double.init)
        time = WireFormat.timestamp(Date(timeIntervalSince1970: Double(row.position.timeMs) / 1000))
        distanceMeters = (row.position.distanceMeters * 10).rounded() / 10
    }

    private enum CodingKeys: String, CodingKey { case runnerId, latitude, longitude, accuracy, time, distanceMeters }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(runnerId, forKey: .runnerId)
        try container.encode(latitude, forKey: .latitude)
        try container.encode(longitude, forKey: .longitude)
        try container.encode(accuracy, forKey: .accuracy)
        try container.encode(time, forKey: .time)
        try container.encode(distanceMeters, forKey: .distanceMeters)
    }
}
