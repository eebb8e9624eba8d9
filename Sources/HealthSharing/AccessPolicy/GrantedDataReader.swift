import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation

/// A third party's reads of one individual's data under a grant: only the granted kinds, only
/// within the granted window, only while the grant is active. Every read that returns data is
/// written to the individual's access log.
package struct GrantedDataReader: Sendable {
    let requests: AccessRequestStore
    let disclosures: DisclosureStore
    let ownData: OwnDataReader
    let workoutStore: WorkoutStore
    let insights: InsightService

    package init(database: Database) {
        self.insights = InsightService(database: database)
        self.requests = AccessRequestStore(database: database)
        self.workoutStore = WorkoutStore(database: database)
        self.disclosures = DisclosureStore(database: database)
        self.ownData = OwnDataReader(database: database)
    }

    /// Samples of the granted types (narrowed further by `types` when given) in the granted window
    /// ∩ `[from, to)`.
    package func samples(
        for party: ThirdPartyID, request id: UUID, types: [SampleType], from: Date?, to: Date?,
        order: ListingOrder, limit: Int, after: SamplePosition?
    ) async throws -> ListingPage<StoredSample, SamplePosition> {
        let (record, individualId, grant) = try await activeGrant(party, id)
        let granted = grant.kinds.compactMap { kind -> SampleType? in
            if case .sample(let type) = kind { return type }
            return nil
        }
        let wanted = types.isEmpty ? granted : types.filter(granted.contains)
        guard !wanted.isEmpty else { throw AccessRequestError.invalid(field: "types", reason: "none of these types is granted") }
        let window = Self.window(grant, from: from, to: to)
        let page = try await ownData.samples(
            ofIndividual: individualId, types: wanted, from: window.from, to: window.to, order: order, limit: limit, after: after
        )
        if !page.items.isEmpty {
            try await disclosures.record(
                individualId: individualId, thirdPartyId: record.thirdPartyId, requestId: record.id, channel: "pull",
                types: Array(Set(page.items.map(\.type.rawValue))).sorted(), itemCount: page.items.count
            )
        }
        return page
    }

    /// Location fixes in the granted window ∩ `[from, to)`, when locations are granted.
    package func locations(
        for party: ThirdPartyID, request id: UUID, from: Date?, to: Date?, order: ListingOrder, limit: Int, after: (timeMs: Int64, key: Int64)?
    ) async throws -> ListingPage<StoredLocationFix, (timeMs: Int64, key: Int64)> {
        let (record, individualId, grant) = try await activeGrant(party, id)
        guard grant.kinds.contains(.location) else { throw AccessRequestError.notCovered(kind: DataKind.locationName) }
        let window = Self.window(grant, from: from, to: to)
        let page = try await ownData.locations(ofIndividual: individualId, from: window.from, to: window.to, order: order, limit: limit, after: after)
        if !page.items.isEmpty {
            try await disclosures.record(
                individualId: individualId, thirdPartyId: record.thirdPartyId, requestId: record.id, channel: "pull",
                types: [DataKind.locationName], itemCount: page.items.count
            )
        }
        return page
    }

    /// Workouts that start in the granted window ∩ `[from, to)`, latest first, when workouts are
    /// granted: their totals, never the import they came with. Answers up to `limit + 1` (the
    /// extra one only says that more exist: not shown, not logged as disclosed).
    package func workouts(
        for party: ThirdPartyID, request id: UUID, from: Date?, to: Date?, limit: Int, before: Int64?
    ) async throws -> [Workout] {
        let (record, individualId, grant) = try await activeGrant(party, id)
        guard grant.kinds.contains(.workout) else { throw AccessRequestError.notCovered(kind: DataKind.workoutName) }
        let window = Self.window(grant, from: from, to: to)
        let rows = try await workoutStore.list(individualId: individualId, from: window.from, to: window.to, limit: limit + 1, beforeId: before)
        if !rows.isEmpty {
            try await disclosures.record(
                individualId: individualId, thirdPartyId: record.thirdPartyId, requestId: record.id, channel: "pull",
                types: [DataKind.workoutName], itemCount: min(rows.count, limit)
            )
        }
        return rows
    }

    /// Each night's resting heart rate whose 5-minute window starts in the granted window ∩
    /// `[from, to)` (at most `InsightService.maximumWindowDays`), nights without one left out, when
    /// `restingHeartRate` is granted. Kept nights as kept, the others computed and kept.
    package func restingHeartRates(for party: ThirdPartyID, request id: UUID, from: Date, to: Date) async throws -> [DailyRestingHeartRate] {
        let (record, individualId, grant) = try await activeGrant(party, id)
        guard grant.kinds.contains(.restingHeartRate) else { throw AccessRequestError.notCovered(kind: DataKind.restingHeartRateName) }
        let window = Self.window(grant, from: from, to: to)
        guard let lower = window.from, let upper = window.to, lower < upper else { return [] }
        let (lowerMs, upperMs) = (lower.epochMilliseconds, upper.epochMilliseconds)
        let nights = try await insights.restingHeartRates(of: IndividualID(rowId: individualId), from: lower, to: upper).filter {
            guard let startMs = $0.windowStartMs else { return false }
            return startMs >= lowerMs && startMs < upperMs
        }
        if !nights.isEmpty {
            try await disclosures.record(
                individualId: individualId, thirdPartyId: record.thirdPartyId, requestId: record.id, channel: "pull",
                types: [DataKind.restingHeartRateName], itemCount: nights.count
            )
        }
        return nights
    }

    /// Workouts that start in the granted window ∩ `[from, to)`, latest first, each with its
    /// analysis (totals, zones, dynamic profiles), when `workoutSummary` is granted — not the
    /// heart-rate readings or the route it was computed from. Up to `limit + 1`, as `workouts`.
    package func workoutSummaries(
        for party: ThirdPartyID, request id: UUID, from: Date?, to: Date?, limit: Int, before: Int64?
    ) async throws -> (summaries: [(workout: Workout, analysis: WorkoutAnalysis)], more: Bool) {
        let (record, individualId, grant) = try await activeGrant(party, id)
        guard grant.kinds.contains(.workoutSummary) else { throw AccessRequestError.notCovered(kind: DataKind.workoutSummaryName) }
        let window = Self.window(grant, from: from, to: to)
        // One row more than the page tells whether another page follows; only the page is analysed.
        let rows = try await workoutStore.list(individualId: individualId, from: window.from, to: window.to, limit: limit + 1, beforeId: before)
        let page = Array(rows.prefix(limit))
        let analyses = try await insights.analyses(of: IndividualID(rowId: individualId), page)
        if !page.isEmpty {
            try await disclosures.record(
                individualId: individualId, thirdPartyId: record.thirdPartyId, requestId: record.id, channel: "pull",
                types: [DataKind.workoutSummaryName], itemCount: page.count
            )
        }
        return (zip(page, analyses).map { (workout: $0.0, analysis: $0.1) }, rows.count > limit)
    }

    private func activeGrant(_ party: ThirdPartyID, _ id: UUID) async throws -> (AccessRequestRecord, Int64, AccessScope) {
        guard let record = try await requests.findForParty(thirdPartyId: party.rowId, publicId: id)
        else { throw AccessRequestError.notFound }
        guard record.status == .granted, let individualId = record.individualId, let granted = record.granted else {
            throw AccessRequestError.notGranted(status: record.status)
        }
        return (record, individualId, AccessScope(record: granted))
    }

    private static func window(_ grant: AccessScope, from: Date?, to: Date?) -> (from: Date?, to: Date?) {
        let lower = [from, grant.dataFrom].compactMap { $0 }.max()
        let upper = [to, grant.dataTo].compactMap { $0 }.min()
        return (lower, upper)
    }
}
