import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// `/api/thirdparties/aggregates` and `/api/thirdparties/budget`: anonymised statistics over
/// groups of individuals, within the party's privacy budget.
struct AggregateController {
    let aggregates: AggregateService
    let subscriptions: AggregateSubscriptions
    let body: JSONBody

    func addRoutes(to group: some RouterMethods<ThirdPartyRequestContext>) {
        group.post("aggregates") { request, context -> EditedResponse<AggregateResultBody> in
            let form = try await body.decode(AggregateSpecForm.self, from: request, context: context)
            let spec = try form.spec(defaultEpsilon: aggregates.budget.defaultEpsilon, maximum: aggregates.budget.perQuery)
            let result = try await aggregates.run(spec, for: context.party)
            return EditedResponse(
                status: result.repeated ? .ok : .created,
                headers: [.location: "/api/thirdparties/aggregates/\(result.id.wireString)"],
                response: AggregateResultBody(result)
            )
        }
        group.get("aggregates") { request, context -> Page<AggregateResultBody> in
            let pagination = try KeysetPagination(request)
            let rows = try await aggregates.results(for: context.party, beforeId: pagination.beforeId, limit: pagination.limit + 1)
            return pagination.page(rows, id: \.id) { AggregateResultBody($0.result) }
        }
        group.get("aggregates/{aggregateId}") { _, context in
            try await AggregateResultBody(aggregates.result(of: Self.aggregateId(context), for: context.party))
        }
        group.post("aggregates/{aggregateId}/subscription") { request, context -> EditedResponse<AggregateSubscriptionBody> in
            let form = try await body.decode(AggregateSubscriptionForm.self, from: request, context: context)
            var fields = FieldValidator()
            let period = fields.required("period", form.period) { (raw: String) throws(InvalidValue) -> AggregatePeriod in
                guard let period = AggregatePeriod(rawValue: raw) else { throw InvalidValue("must be daily or weekly") }
                return period
            }
            try fields.finish()
            let (record, created) = try await subscriptions.subscribe(context.party, query: Self.aggregateId(context), period: period!)
            return EditedResponse(status: created ? .created : .ok, response: AggregateSubscriptionBody(record))
        }
        group.get("aggregates/{aggregateId}/subscription") { _, context in
            AggregateSubscriptionBody(try await subscriptions.subscription(context.party, query: Self.aggregateId(context)))
        }
        group.delete("aggregates/{aggregateId}/subscription") { _, context in
            try await subscriptions.unsubscribe(context.party, query: Self.aggregateId(context))
            return Response(status: .noContent)
        }
        group.get("budget") { _, context in
            BudgetBody(try await aggregates.status(for: context.party))
        }
    }
}

extension AggregateController {
    /// A malformed id names no query of mine: 404 like any other.
    static func aggregateId(_ context: ThirdPartyRequestContext) throws -> UUID {
        return try context.parameters.id("aggregateId", missing: AggregateError.notFound)
    }
}

struct AggregateSubscriptionForm: Decodable {
    var period: String?
}

/// A subscription: its period, state, when it next runs, and the latest recomputation.
struct AggregateSubscriptionBody: ResponseEncodable {
    let id: String
    let aggregateId: String
    let period: String
    let status: String
    let stoppedReason: String?
    let createdAt: Date
    let nextRunAt: Date?
    let runs: Int
    let lastAggregateId: String?

    init(_ record: AggregateSubscriptionRecord) {
        id = record.publicId.wireString
        aggregateId = record.queryPublicId.wireString
        period = record.period
        status = record.status.rawValue
        stoppedReason = record.stoppedReason
        createdAt = record.createdAt
        nextRunAt = record.status == .active ? record.nextRunAt : nil
        runs = record.runs
        lastAggregateId = record.lastQueryPublicId?.wireString
    }
}

/// The query spec as sent. Keys outside the grammar (a polygon, a radius…) are refused by name.
struct AggregateSpecForm: Decodable {
    var type: String?
    var statistic: String?
    var areas: [String]?
    var ageBands: [String]?
    var sex: String?
    var from: String?
    var to: String?
    var groupBy: String?
    var epsilon: Double?
    var unknownKeys: [String] = []
    var nullKeys: [String] = []

    private enum Known: String, CodingKey, CaseIterable { case type, statistic, areas, ageBands, sex, from, to, groupBy, epsilon }

    private struct AnyKey: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let all = try decoder.container(keyedBy: AnyKey.self)
        unknownKeys = all.allKeys.map(\.stringValue).filter { Known(rawValue: $0) == nil }.sorted()
        let known = try decoder.container(keyedBy: Known.self)
        nullKeys = try Known.allCases.filter { try known.contains($0) && known.decodeNil(forKey: $0) }.map(\.rawValue)
        type = try known.decodeIfPresent(String.self, forKey: .type)
        statistic = try known.decodeIfPresent(String.self, forKey: .statistic)
        areas = try known.decodeIfPresent([String].self, forKey: .areas)
        ageBands = try known.decodeIfPresent([String].self, forKey: .ageBands)
        sex = try known.decodeIfPresent(String.self, forKey: .sex)
        from = try known.decodeIfPresent(String.self, forKey: .from)
        to = try known.decodeIfPresent(String.self, forKey: .to)
        groupBy = try known.decodeIfPresent(String.self, forKey: .groupBy)
        epsilon = try known.decodeIfPresent(Double.self, forKey: .epsilon)
    }

    func spec(defaultEpsilon: Epsilon, maximum: Epsilon) throws -> AggregateSpec {
        var fields = FieldValidator()
        for key in unknownKeys { fields.fail(key, "is not part of the query grammar") }
        for key in nullKeys { fields.fail(key, "must not be null; leave it out instead") }
        let type = fields.required("type", type) { (raw: String) throws(InvalidValue) -> AggregateSubject in
            guard let type = AggregateSubject(rawValue: raw) else { throw InvalidValue("must be a data type such as heartRate") }
            return type
        }
        let statistic = fields.required("statistic", statistic) { (raw: String) throws(InvalidValue) -> AggregateStatistic in
            guard let statistic = AggregateStatistic(rawValue: raw) else {
                throw InvalidValue("must be one of count, mean, sum, histogram, quantiles")
            }
            return statistic
        }
        let areas = fields.optional("areas", areas) { (raw: [String]) throws(InvalidValue) in try raw.map(AreaCode.init(parsing:)) } ?? []
        let bands = fields.optional("ageBands", ageBands) { (raw: [String]) throws(InvalidValue) in try raw.map(AgeBand.init(parsing:)) } ?? []
        let sex = fields.optional("sex", sex, Sex.init(parsing:))
        let from = fields.required("from", from, CalendarDay.init(parsing:))
        let to = fields.required("to", to, CalendarDay.init(parsing:))
        let groupBy = fields.optional("groupBy", groupBy) { (raw: String) throws(InvalidValue) -> AggregateDimension in
            guard let dimension = AggregateDimension(rawValue: raw) else { throw InvalidValue("must be one of area, ageBand, sex, day, week") }
            return dimension
        }
        let epsilon =
            fields.optional("epsilon", epsilon) { (raw: Double) throws(InvalidValue) in try Epsilon(parsing: raw, maximum: maximum) }
            ?? defaultEpsilon
        try fields.finish()
        return try AggregateSpec(
            type: type!, statistic: statistic!, areas: areas, ageBands: bands, sex: sex, from: from!, to: to!, groupBy: groupBy, epsilon: epsilon
        )
    }
}

/// A released answer: the normalised spec, ε spent, and per group the noisy figures.
struct AggregateResultBody: ResponseEncodable, Sendable {
    let id: String
    let createdAt: Date
    let epsilon: Double
    let repeated: Bool
    let spec: AggregateSpecBody
    let status: String
    let reason: String?
    let groups: [AggregateAnswer.Group]

    init(_ result: AggregateResult) {
        id = result.id.wireString
        createdAt = result.createdAt
        epsilon = result.epsilon.value
        repeated = result.repeated
        spec = (try? JSONDecoder().decode(AggregateSpecBody.self, from: Data(result.spec.utf8))) ?? AggregateSpecBody()
        status = result.answer.status.rawValue
        reason = result.answer.reason
        groups = result.answer.groups
    }
}

struct AggregateSpecBody: Codable, Sendable {
    var type = ""
    var statistic = ""
    var areas: [String] = []
    var ageBands: [String] = []
    var sex: String?
    var from = ""
    var to = ""
    var groupBy: String?
    var epsilon = 0.0
}

struct BudgetBody: ResponseEncodable {
    struct Window: Encodable {
        let limit: Double
        let spent: Double
        let remaining: Double
    }

    let perQuery: Double
    let day: Window
    let days30: Window

    init(_ status: BudgetStatus) {
        perQuery = status.budget.perQuery.value
        day = Window(
            limit: status.budget.perDay.value, spent: status.spentToday.value, remaining: max(0, status.budget.perDay.value - status.spentToday.value)
        )
        days30 = Window(
            limit: status.budget.per30Days.value, spent: status.spent30Days.value,
            remaining: max(0, status.budget.per30Days.value - status.spent30Days.value))
    }
}
