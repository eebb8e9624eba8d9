import Data4HelpCore
import DatabaseLink
import Foundation
import Logging
import ServiceLifecycle

/// Keeps the derived values current for everyone, not only for those who look: every `interval`,
/// the resting heart rate of the recent nights of people with new heart-rate readings, and the
/// analysis of new workouts (on import or when a run ends). Aggregates over `restingHeartRate`
/// read the kept nights, so this is what makes them cover the population. Every instance
/// sweeps; the writes are idempotent upserts, so two sweeps of one person cost work, not harm.
/// A change of sleep alone (no new heart-rate reading) is seen at the person's next read.
package struct InsightSweeper: Service {
    /// Nights (back from today) and workouts (stored in these days) a sweep looks at.
    package static let recentDays: Int32 = 3
    package static let batch = 500

    let insights: InsightService
    let rests: RestingHeartRateStore
    let analyses: WorkoutAnalysisStore
    let workouts: WorkoutStore
    let interval: Duration
    let schemaReady: StartupGate
    let logger: Logger

    package init(database: Database, interval: Duration, schemaReady: StartupGate, logger: Logger) {
        insights = InsightService(database: database)
        rests = RestingHeartRateStore(database: database, heartRateCode: SampleType.heartRate.storageCode)
        analyses = WorkoutAnalysisStore(database: database)
        workouts = WorkoutStore(database: database)
        self.interval = interval
        self.schemaReady = schemaReady
        self.logger = logger
    }

    package func run() async throws {
        await repeatWhenReady(every: interval, schemaReady: schemaReady, job: "insight sweep", logger: logger) { _ = try await sweep() }
    }

    /// One sweep: how many people's nights and how many workouts it computed.
    package func sweep(now: Date = Date()) async throws -> (people: Int, workouts: Int) {
        let people = try await rests.staleIndividuals(days: Self.recentDays, limit: Self.batch)
        for id in people {
            // A day either side: the person's local days are not the server's.
            _ = try await insights.restingHeartRates(
                of: IndividualID(rowId: id), from: now.addingTimeInterval(-Double(Self.recentDays) * 86_400 - 86_400),
                to: now.addingTimeInterval(86_400))
        }
        let pending = try await analyses.unanalysed(days: Self.recentDays, limit: Self.batch)
        for (individualId, group) in Dictionary(grouping: pending, by: \.individualId) {
            let list = try await workouts.workouts(individualId: individualId, ids: group.map(\.workoutId))
            _ = try await insights.analyses(of: IndividualID(rowId: individualId), list)
        }
        return (people.count, pending.count)
    }
}
