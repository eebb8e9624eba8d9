import Data4HelpCore
import DatabaseLink
import Logging
import ServiceLifecycle

/// Adds the days rolled before migration 0056 to `activity_days`, online: a batch of individuals
/// per transaction until everyone is done (`ActivityDaysStore.backfill`), then nothing but a look
/// at the state row every `interval`. Until it is done, time groupings collect their members in
/// the grouped statement as before (`GroupAggregateStore.answer`). A pass cut short (a restart,
/// an error) resumes at the next batch; every instance runs it, one batch at a time.
package struct ActivityBackfill: Service {
    /// Individuals per transaction: a new day or a day taken away of theirs waits for it (about
    /// 150 ms at 100 people with a year of two types each); values added to a day already there
    /// do not.
    package static let batch = 100

    let store: ActivityDaysStore
    let interval: Duration
    let schemaReady: StartupGate
    let logger: Logger

    package init(database: Database, interval: Duration = .seconds(60), schemaReady: StartupGate, logger: Logger) {
        store = ActivityDaysStore(database: database)
        self.interval = interval
        self.schemaReady = schemaReady
        self.logger = logger
    }

    package func run() async throws {
        await repeatWhenReady(every: interval, schemaReady: schemaReady, job: "activity backfill", logger: logger) { try await pass() }
    }

    /// Batches until everyone is done (or the task is cancelled); how many batches it ran.
    @discardableResult
    package func pass(batchSize: Int = Self.batch) async throws -> Int {
        var batches = 0
        while !Task.isCancelled, try await !store.backfill(individuals: batchSize) {
            batches += 1
        }
        if batches > 0 { logger.info("activity days backfilled", metadata: ["batches": "\(batches)"]) }
        return batches
    }
}
