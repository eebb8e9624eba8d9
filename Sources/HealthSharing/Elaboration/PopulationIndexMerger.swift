import Data4HelpCore
import DatabaseLink
import Logging
import ServiceLifecycle

/// Keeps the privacy record's index merged, off every answer's path.
///
/// An answer's members go into the pending list of `aggregate_populations_members_idx` (GIN's
/// fast update: about 9 ms for 10,000 people), and the insert that finds that list past
/// `gin_pending_list_limit` (4 MB, about twenty answers of 10,000 people) merged all of it into
/// the index while its own answer waited: 50 ms more for one answer in twenty, measured in `psql`,
/// which is what the p95 of `bench aggregates` saw. This service merges the list after each answer
/// (every instance hears every answer, `AggregateQueryStore.channel`), so an insert finds it short.
/// A merge running elsewhere is waited for by PostgreSQL, then finds nothing to do.
package struct PopulationIndexMerger: Service {
    let queries: AggregateQueryStore
    /// Bumped whenever any query ends.
    let answers: ChangeSignal
    let schemaReady: StartupGate
    let logger: Logger
    /// How long it waits for an answer before looking anyway (an announcement may be missed while
    /// the listening connection is down).
    package var pollInterval: Duration = .seconds(60)

    package init(database: Database, answers: ChangeSignal, schemaReady: StartupGate, logger: Logger) {
        self.queries = AggregateQueryStore(database: database)
        self.answers = answers
        self.schemaReady = schemaReady
        self.logger = logger
    }

    package func run() async throws {
        await cancelWhenGracefulShutdown {
            await answers.repeatWhileBusy(pollInterval: pollInterval) { await mergeOnce() }
        }
    }

    /// One merge; true when it moved anything (then the loop looks again at once).
    package func mergeOnce() async -> Bool {
        guard schemaReady.isOpen else { return false }
        do {
            return try await queries.mergePopulationIndex() > 0
        } catch {
            logger.warning("privacy record index merge failed; will retry", metadata: ["error.type": "\(String(reflecting: type(of: error)))"])
            return false
        }
    }
}
