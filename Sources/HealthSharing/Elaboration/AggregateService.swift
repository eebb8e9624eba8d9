import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation

/// A query's released answer, as stored.
package struct AggregateResult: Sendable {
    package let id: UUID
    package let createdAt: Date
    package let epsilon: Epsilon
    /// The normalised spec, canonical JSON.
    package let spec: String
    package let answer: AggregateAnswer
    /// True when this answers a repeated question from the store (nothing spent).
    package let repeated: Bool
}

extension AggregateResult {
    /// A stored query with its answer.
    init(_ record: AggregateQueryRecord, repeated: Bool) throws {
        let answer = try JSONDecoder().decode(AggregateAnswer.self, from: Data((record.answer ?? "").utf8))
        self.init(
            id: record.publicId, createdAt: record.createdAt, epsilon: Epsilon(hundredths: record.epsilonHundredths),
            spec: record.spec, answer: answer, repeated: repeated
        )
    }
}

/// The budget a party has left.
package struct BudgetStatus: Sendable {
    package let budget: PrivacyBudget
    package let spentToday: Epsilon
    package let spent30Days: Epsilon
}

/// HealthSharing's Data Elaboration Module: group queries answered with differential privacy,
/// within each party's privacy budget, every one in the audit chain.
///
/// A query reserves its ε before it runs (so concurrent queries cannot overspend), runs the
/// exact bounded aggregation in a read-only transaction, releases only noisy figures of the
/// groups that pass the noisy threshold, and stores that answer: the same question from the same
/// party within 30 days gets it back at no cost, never fresh noise. A refusal spends too — it was
/// computed from the data.
package struct AggregateService: Sendable {
    let queries: AggregateQueryStore
    let groups: GroupAggregateStore
    let parties: ThirdPartyStore
    package let budget: PrivacyBudget
    package let mechanism: AggregateMechanism
    /// Bumped whenever any query ends (`AggregateQueryStore.channel`, heard by the event listener).
    let answers: ChangeSignal

    /// `answers` wakes a repeated question's wait for the first answer; without a listener
    /// bumping it, the wait re-reads once a second.
    package init(
        database: Database, readDatabase: Database? = nil, budget: PrivacyBudget, mechanism: AggregateMechanism,
        answers: ChangeSignal = ChangeSignal()
    ) {
        self.answers = answers
        self.queries = AggregateQueryStore(database: database)
        self.groups = GroupAggregateStore(database: readDatabase ?? database)
        self.parties = ThirdPartyStore(database: database)
        self.budget = budget
        self.mechanism = mechanism
    }

    package func run(_ spec: AggregateSpec, for party: ThirdPartyID) async throws -> AggregateResult {
        try await run(spec, party: party).result
    }

    /// Runs the query for the party; also answers the stored query's internal id.
    package func run(_ spec: AggregateSpec, party thirdParty: ThirdPartyID) async throws -> (result: AggregateResult, queryId: Int64) {
        let party = thirdParty.rowId
        guard spec.epsilon <= budget.perQuery else {
            throw AggregateError.invalid(field: "epsilon", reason: "may be at most \(budget.perQuery.text) per query")
        }
        let publicParty = try await partyPublicId(party)
        switch try await queries.start(
            thirdPartyId: party, fingerprint: spec.fingerprint, spec: spec.canonicalJSON, epsilonHundredths: spec.epsilon.hundredths,
            repeatWindow: PrivacyBudget.repeatWindow, ledgerWindow: PrivacyBudget.ledgerWindow,
            decide: { [budget] ledger in budget.refusal(for: spec.epsilon, in: ledger) }
        ) {
        case .refused(let refusal):
            throw AggregateError.budgetExhausted(window: refusal.window, retryAfter: refusal.retryAfter)
        case .repeated(let earlier):
            let finished = try await waitForAnswer(earlier)
            try await queries.auditRepeat(finished, thirdParty: publicParty, fingerprint: spec.fingerprint)
            return (try AggregateResult(finished, repeated: true), finished.id)
        case .reserved(let query):
            do {
                let (answer, population) = try await groups.answer(groupQuery(spec)) { [mechanism] exact in
                    let released = mechanism.releasing(exact, spec: spec)
                    return (released.answer, released.releasedKeys)
                }
                let text = String(decoding: try JSONEncoder.sorted.encode(answer), as: UTF8.self)
                let stored = try await queries.finish(
                    query, thirdParty: publicParty, status: answer.status, answer: text, fingerprint: spec.fingerprint, population: population)
                return (try AggregateResult(stored, repeated: false), stored.id)
            } catch {
                try? await queries.fail(query)
                throw error
            }
        }
    }

    package func result(of id: UUID, for party: ThirdPartyID) async throws -> AggregateResult {
        guard let record = try await queries.find(thirdPartyId: party.rowId, publicId: id), record.answer != nil else {
            throw AggregateError.notFound
        }
        return try AggregateResult(record, repeated: false)
    }

    package func results(for party: ThirdPartyID, beforeId: Int64?, limit: Int) async throws -> [(id: Int64, result: AggregateResult)] {
        try await queries.list(thirdPartyId: party.rowId, beforeId: beforeId, limit: limit)
            .filter { $0.answer != nil }
            .map { ($0.id, try AggregateResult($0, repeated: false)) }
    }

    package func status(for party: ThirdPartyID) async throws -> BudgetStatus {
        let spent = budget.spent(in: try await queries.ledger(thirdPartyId: party.rowId, window: PrivacyBudget.ledgerWindow))
        return BudgetStatus(budget: budget, spentToday: spent.day, spent30Days: spent.days30)
    }

    /// An identical query still running (asked twice at once, here or on another instance) is
    /// waited for, up to a minute: re-read when any query ends, and at least once a second in
    /// case a wake-up was missed.
    private func waitForAnswer(_ query: AggregateQueryRecord) async throws -> AggregateQueryRecord {
        var current = query
        let deadline = ContinuousClock.now + .seconds(60)
        while current.status == .running {
            let seen = answers.generation
            current = try await queries.find(id: query.id) ?? current
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard current.status == .running, remaining > .zero else { break }
            await answers.wait(after: seen, timeout: min(remaining, .seconds(1)))
            try Task.checkCancellation()
        }
        guard current.answer != nil else { throw AggregateError.notFound }
        return current
    }

    package func groupQuery(_ spec: AggregateSpec) -> GroupQuery {
        let domain = AggregateDomain(spec.type)!
        let key: GroupQuery.Key =
            switch spec.groupBy {
            case nil: .none
            case .area?: .area
            case .ageBand?: .ageBand
            case .sex?: .sex
            case .day?: .day
            case .week?: .week
            }
        let (months, added, subtracted) = spec.readPlan()
        var query = GroupQuery(
            sampleType: spec.type.storageCode, dailyTotal: domain.daily == .total, areas: spec.areas,
            ageBands: spec.ageBands.map { Int32($0.lower) }, sex: spec.sex?.rawValue, from: spec.from.text, to: spec.to.text,
            months: months.map(\.text), addedDays: added.map(\.text), subtractedDays: subtracted.map(\.text),
            key: key, lower: domain.lower,
            upper: domain.upper, binWidth: domain.binWidth, binCount: Int32(domain.binCount),
            resolution: domain.resolution
        )
        let (weeks, edges) = spec.wholeWeeks()
        query.reads =
            switch spec.statistic {
            case .count: .individuals
            case .mean: .centredSum
            case .sum: .sum
            case .histogram, .quantiles: .bins
            }
        query.weeks = weeks.map(\.text)
        query.weekEdges = edges.map { ($0.from.text, $0.to.text, AggregateSpec.weekStart($0.from).text) }
        return query
    }

    private func partyPublicId(_ id: Int64) async throws -> UUID {
        guard let party = try await parties.find(id: id) else { throw AggregateError.notFound }
        return party.publicId
    }
}

extension JSONEncoder {
    /// Sorted keys: the stored answer is byte-for-byte what the audit log hashes.
    static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
