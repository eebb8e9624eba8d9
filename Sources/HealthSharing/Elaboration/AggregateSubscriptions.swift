import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation
import Logging
import ServiceLifecycle

/// How often a subscribed aggregate is recomputed.
package enum AggregatePeriod: String, Sendable, CaseIterable {
    case daily, weekly

    /// When the next period's figures are complete: an hour past the next UTC midnight (daily) or
    /// the next Monday (weekly), leaving late uploads an hour to arrive.
    func nextRun(after now: Date) -> Date {
        let today = CalendarDay(containing: now)
        let next =
            switch self {
            case .daily: CalendarDay(ordinal: today.ordinal + 1)
            case .weekly: CalendarDay(ordinal: AggregateSpec.weekStart(today).ordinal + 7)
            }
        return next.date.addingTimeInterval(3600)
    }

    /// The last day of the last complete period as of `now`.
    func lastCompleteDay(at now: Date) -> CalendarDay {
        let today = CalendarDay(containing: now)
        return switch self {
        case .daily: CalendarDay(ordinal: today.ordinal - 1)
        case .weekly: CalendarDay(ordinal: AggregateSpec.weekStart(today).ordinal - 1)
        }
    }
}

/// Group subscriptions: an answered aggregate query recomputed each new day or week over a
/// window of the same length ending with that period, paid from the party's budget like any
/// query, and delivered as an `aggregate.updated` event (webhook, stream). When the budget runs
/// out the subscription stops and an `aggregate.stopped` event says so.
package struct AggregateSubscriptions: Sendable {
    let store: AggregateSubscriptionStore
    let service: AggregateService

    package init(database: Database, service: AggregateService) {
        self.store = AggregateSubscriptionStore(database: database)
        self.service = service
    }

    package func subscribe(_ party: ThirdPartyID, query: UUID, period: AggregatePeriod) async throws -> (AggregateSubscriptionRecord, created: Bool) {
        guard
            let (record, created) = try await store.subscribe(
                thirdPartyId: party.rowId, query: query, period: period.rawValue, firstRun: period.nextRun(after: Date())
            )
        else { throw AggregateError.notFound }
        return (record, created)
    }

    package func subscription(_ party: ThirdPartyID, query: UUID) async throws -> AggregateSubscriptionRecord {
        guard let record = try await store.find(thirdPartyId: party.rowId, query: query) else { throw AggregateError.notFound }
        return record
    }

    package func unsubscribe(_ party: ThirdPartyID, query: UUID) async throws {
        guard try await store.unsubscribe(thirdPartyId: party.rowId, query: query) else { throw AggregateError.notFound }
    }

    /// Recomputes every due subscription once; what a runner instance does each interval.
    package func runDue(now: Date = Date(), logger: Logger) async throws {
        for subscription in try await store.claimDue(limit: 100, lease: .seconds(600)) {
            guard let period = AggregatePeriod(rawValue: subscription.period) else { continue }
            do {
                let spec = try AggregateSpec(canonicalJSON: subscription.spec).ending(on: period.lastCompleteDay(at: now))
                let (result, queryId) = try await service.run(spec, party: ThirdPartyID(rowId: subscription.thirdPartyId))
                // A repeat (the same window asked again) has been delivered already.
                try await store.recordRun(subscription, queryId: queryId, nextRunAt: period.nextRun(after: now), announce: !result.repeated)
            } catch AggregateError.budgetExhausted {
                try await store.stop(subscription, reason: "privacy budget exhausted")
            } catch let error as AggregateError {
                try await store.stop(subscription, reason: "the query can no longer be run")
                logger.warning("aggregate subscription stopped", metadata: ["error": "\(error)"])
            }
        }
    }
}

/// Runs due aggregate subscriptions every `interval`, on every instance (claims do not overlap).
package struct AggregateSubscriptionRunner: Service {
    let subscriptions: AggregateSubscriptions
    let interval: Duration
    let schemaReady: StartupGate
    let logger: Logger

    package init(subscriptions: AggregateSubscriptions, interval: Duration, schemaReady: StartupGate, logger: Logger) {
        self.subscriptions = subscriptions
        self.interval = interval
        self.schemaReady = schemaReady
        self.logger = logger
    }

    package func run() async throws {
        await repeatWhenReady(every: interval, schemaReady: schemaReady, job: "aggregate subscriptions", logger: logger) {
            try await subscriptions.runDue(logger: logger)
        }
    }
}

extension AggregateSpec {
    /// The spec again from its canonical JSON (as stored), checked as when it was first asked.
    package init(canonicalJSON: String) throws {
        struct Stored: Decodable {
            var type: String, statistic: String, areas: [String], ageBands: [String], sex: String?
            var from: String, to: String, groupBy: String?, epsilon: Double
        }
        let stored = try JSONDecoder().decode(Stored.self, from: Data(canonicalJSON.utf8))
        guard let type = AggregateSubject(rawValue: stored.type), let statistic = AggregateStatistic(rawValue: stored.statistic) else {
            throw AggregateError.invalid(field: "spec", reason: "is not a stored query")
        }
        try self.init(
            type: type, statistic: statistic, areas: stored.areas.map(AreaCode.init(parsing:)), ageBands: stored.ageBands.map(AgeBand.init(parsing:)),
            sex: stored.sex.map(Sex.init(parsing:)), from: CalendarDay(parsing: stored.from), to: CalendarDay(parsing: stored.to),
            groupBy: stored.groupBy.flatMap(AggregateDimension.init(rawValue:)), epsilon: Epsilon(hundredths: Int((stored.epsilon * 100).rounded()))
        )
    }

    /// The same question over a window of the same length ending on `day`.
    package func ending(on day: CalendarDay) throws(AggregateError) -> AggregateSpec {
        try AggregateSpec(
            type: type, statistic: statistic, areas: areas.compactMap { try? AreaCode(parsing: $0) }, ageBands: ageBands, sex: sex,
            from: CalendarDay(ordinal: day.ordinal - days + 1), to: day, groupBy: groupBy, epsilon: epsilon
        )
    }
}
