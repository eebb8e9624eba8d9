import Data4HelpCore
import DatabaseLink
import Logging
import ServiceLifecycle

/// Keeps the privacy record's index merged, off every answer's path, a busy moment's answers at a
/// time.
///
/// An answer's members go into the pending list of `aggregate_populations_members_idx` (GIN's
/// fast update: about 9 ms for 10,000 people), and the insert that finds that list past
/// `gin_pending_list_limit` merges all of it into the index while its own answer waits: 50 ms more
/// for one answer in twenty at the default 4 MB, measured in `psql`, which is what the p95 of
/// `bench aggregates` saw. This service merges the list instead (every instance hears every
/// answer, `AggregateQueryStore.channel`), and migration 0055 raises the index's limit to 16 MB
/// so that an insert does not find it full between two merges.
///
/// It lets the answers of a busy moment gather first: merging costs each distinct member once
/// whatever the number of answers pending that name them (`psql`, 10,000 people an answer: one
/// answer 17–32 ms, five 38 ms, twenty 64–107 ms), and a merge after every answer ran beside the
/// next answer's statement on the same cores. A merge waits until no answer has come for
/// `quiet`, or `longest` after the first, whichever is sooner; a lookup meanwhile also reads the
/// pending list (25 pages an answer of 10,000 people, a few milliseconds for ten).
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
    /// A merge waits until no answer has come for this long…
    package var quiet: Duration = .milliseconds(500)
    /// …or until this long after the answer that woke it.
    package var longest: Duration = .seconds(2)

    package init(database: Database, answers: ChangeSignal, schemaReady: StartupGate, logger: Logger) {
        self.queries = AggregateQueryStore(database: database)
        self.answers = answers
        self.schemaReady = schemaReady
        self.logger = logger
    }

    /// Merges at start, then after each gathering of answers. The generation is read before each
    /// merge, so an answer that came during one wakes the next at once.
    package func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let seen = answers.generation
                await mergeOnce()
                await answers.wait(after: seen, timeout: pollInterval)
                await gather()
            }
        }
    }

    /// Returns once no answer has come for `quiet`, or `longest` from now.
    func gather() async {
        let deadline = ContinuousClock.now + longest
        while !Task.isCancelled {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { return }
            let seen = answers.generation
            await answers.wait(after: seen, timeout: min(quiet, remaining))
            if answers.generation == seen { return }
        }
    }

    /// One merge of everything pending (a failure is logged; the next round tries again).
    package func mergeOnce() async {
        guard schemaReady.isOpen else { return }
        do {
            _ = try await queries.mergePopulationIndex()
        } catch {
            logger.warning("privacy record index merge failed; will retry", metadata: ["error.type": "\(String(reflecting: type(of: error)))"])
        }
    }
}
