import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// `/api/thirdparties/requests/{requestId}/data[/locations|/workouts]`: a party pulls the data of an
/// active grant — granted types only, within the granted window. Same query and page shape as the
/// individual's own listings.
struct GrantedDataController {
    let granted: GrantedDataReader

    func addRoutes(to group: some RouterMethods<ThirdPartyRequestContext>) {
        group.get("requests/{requestId}/data") { request, context -> Page<SampleBody> in
            let id = try AccessScopeFields.requestId(context.parameters)
            let query = try SampleListingQuery(request)
            return try await query.page(
                granted.samples(
                    for: context.party, request: id, types: query.types, from: query.range.from, to: query.range.to,
                    order: query.range.order, limit: query.range.limit, after: query.after
                ))
        }
        group.get("requests/{requestId}/data/locations") { request, context -> Page<LocationFixBody> in
            let id = try AccessScopeFields.requestId(context.parameters)
            let query = try LocationListingQuery(request)
            return try await query.page(
                granted.locations(
                    for: context.party, request: id, from: query.range.from, to: query.range.to,
                    order: query.range.order, limit: query.range.limit, after: query.after
                ))
        }
        group.get("requests/{requestId}/data/workouts", use: workouts)
        group.get("requests/{requestId}/data/workout-summaries", use: workoutSummaries)
        group.get("requests/{requestId}/data/resting-heart-rate", use: restingHeartRates)
    }

    /// `from` and `to` of a listing, each optional, `to` later than `from`.
    static func window(_ request: Request, required: Bool = false) throws -> (from: Date?, to: Date?) {
        var fields = FieldValidator()
        let query = request.uri.queryParameters
        let from: Date?, to: Date?
        if required {
            from = fields.required("from", query["from"].map(String.init), TimeRangeQuery.instant)
            to = fields.required("to", query["to"].map(String.init), TimeRangeQuery.instant)
        } else {
            from = fields.optional("from", query["from"].map(String.init), TimeRangeQuery.instant)
            to = fields.optional("to", query["to"].map(String.init), TimeRangeQuery.instant)
        }
        if let from, let to, from >= to { fields.fail("to", "must be later than from") }
        try fields.finish()
        return (from, to)
    }

    /// `GET …/data/workout-summaries`: workouts starting in the granted window ∩ `[from, to)`,
    /// latest first, each with its analysis.
    @Sendable func workoutSummaries(_ request: Request, context: ThirdPartyRequestContext) async throws -> Page<GrantedWorkoutSummaryBody> {
        let id = try AccessScopeFields.requestId(context.parameters)
        let pagination = try KeysetPagination(request)
        let window = try Self.window(request)
        let (summaries, more) = try await granted.workoutSummaries(
            for: context.party, request: id, from: window.from, to: window.to, limit: pagination.limit, before: pagination.beforeId)
        return pagination.page(
            summaries, more: more, id: \.workout.sequence,
            item: {
                GrantedWorkoutSummaryBody(
                    workout: WorkoutBody($0.workout, detail: nil, forParty: true), analysis: WorkoutInsightBody($0.workout, $0.analysis, earlier: []))
            })
    }

    /// `GET …/data/resting-heart-rate?from=&to=`: each night's resting heart rate in the granted
    /// window ∩ `[from, to)` (both required, at most 400 days).
    @Sendable func restingHeartRates(_ request: Request, context: ThirdPartyRequestContext) async throws -> GrantedRestingHeartRateBody {
        let id = try AccessScopeFields.requestId(context.parameters)
        let window = try Self.window(request, required: true)
        let nights = try await granted.restingHeartRates(for: context.party, request: id, from: window.from!, to: window.to!)
        return GrantedRestingHeartRateBody(
            items: nights.compactMap { night in
                guard let bpm = night.bpm, let startMs = night.windowStartMs else { return nil }
                return .init(day: night.day, bpm: bpm, windowStart: WireFormat.timestamp(milliseconds: startMs))
            })
    }

    /// `GET …/data/workouts`: workouts starting in the granted window ∩ `[from, to)`, latest first.
    @Sendable func workouts(_ request: Request, context: ThirdPartyRequestContext) async throws -> Page<WorkoutBody> {
        let id = try AccessScopeFields.requestId(context.parameters)
        let pagination = try KeysetPagination(request)
        let window = try Self.window(request)
        let rows = try await granted.workouts(
            for: context.party, request: id, from: window.from, to: window.to, limit: pagination.limit, before: pagination.beforeId)
        return pagination.page(rows, id: \.sequence, item: { WorkoutBody($0, detail: nil, forParty: true) })
    }
}

/// One workout with its analysis (`GrantedWorkoutSummary`).
struct GrantedWorkoutSummaryBody: Encodable, Sendable {
    let workout: WorkoutBody
    let analysis: WorkoutInsightBody
}

/// `GrantedRestingHeartRate`: the nights with a value, oldest first.
struct GrantedRestingHeartRateBody: ResponseEncodable, Sendable {
    struct Night: Encodable, Sendable {
        let day: String
        let bpm: Double
        let windowStart: String
    }

    let items: [Night]
}

/// One entry of the individual's access log: to an organisation (under a request) or to a carer
/// (under a care link).
struct DisclosureBody: Encodable, Sendable {
    struct Organisation: Encodable, Sendable {
        let id: String
        let name: String
    }

    struct Carer: Encodable, Sendable {
        let linkId: String
        @Nullable var name: String?
    }

    /// A share link's opening: the link, by the label its owner gave it.
    struct ShareLink: Encodable, Sendable {
        let linkId: String
        let label: String
    }

    let at: Date
    @Nullable var organisation: Organisation?
    @Nullable var requestId: String?
    @Nullable var carer: Carer?
    @Nullable var shareLink: ShareLink?
    let channel: String
    let types: [String]
    let itemCount: Int

    init(_ record: DisclosureRecord) {
        at = record.at
        switch record.recipient {
        case .organisation(let id, let name, let request):
            (organisation, requestId, carer, shareLink) = (Organisation(id: id.wireString, name: name), request.wireString, nil, nil)
        case .carer(let link, let name):
            (organisation, requestId, carer, shareLink) = (nil, nil, Carer(linkId: link.wireString, name: name), nil)
        case .shareLink(let link, let label):
            (organisation, requestId, carer, shareLink) = (nil, nil, nil, ShareLink(linkId: link.wireString, label: label))
        }
        channel = record.channel
        types = record.types
        itemCount = record.itemCount
    }
}
