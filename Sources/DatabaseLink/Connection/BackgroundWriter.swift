import Logging
import Synchronization

/// What a `BackgroundWriter` gathers between two writes: empty at first, and counted for its
/// warnings.
protocol BackgroundBatch {
    init()
    var isEmpty: Bool { get }
    var count: Int { get }
}

extension Array: BackgroundBatch {}

/// Writes what requests note, in the background: what is noted while one write is under way goes
/// in the next one, together, and no request waits for it. `AnnouncementSender` and
/// `CredentialUseWriter` are its two uses.
///
/// The drain is detached: it outlives the request that started it and writes the others' notes
/// too, so it must not carry that request's priority or task-local values (its logger metadata,
/// its trace span). A batch that cannot be written (the database unreachable) is dropped with a
/// warning naming its count and the error's type, never its content.
final class BackgroundWriter<Batch: BackgroundBatch & Sendable>: Sendable {
    private let state = Mutex<(pending: Batch, writing: Bool)>((Batch(), false))
    private let failure: Logger.Message
    private let metadata: Logger.Metadata
    private let logger: Logger
    private let write: @Sendable (Batch) async throws -> Void

    /// `write` writes one batch; `failure` and `metadata` are the warning when it throws.
    init(
        logger: Logger, failure: Logger.Message, metadata: Logger.Metadata = [:], write: @escaping @Sendable (Batch) async throws -> Void
    ) {
        self.logger = logger
        self.failure = failure
        self.metadata = metadata
        self.write = write
    }

    /// Adds to the batch being gathered (`add` runs under the writer's lock: keep it short) and
    /// returns what `add` did, at once.
    func note<Result>(_ add: (inout Batch) -> Result) -> Result {
        let (result, start) = state.withLock { state in
            let result = add(&state.pending)
            defer { state.writing = true }
            return (result, !state.writing)
        }
        if start { Task.detached { await self.drain() } }
        return result
    }

    private func drain() async {
        while let batch = state.withLock({ state -> Batch? in
            guard !state.pending.isEmpty else {
                state.writing = false
                return nil
            }
            defer { state.pending = Batch() }
            return state.pending
        }) {
            do {
                try await write(batch)
            } catch {
                var metadata = self.metadata
                metadata["count"] = "\(batch.count)"
                metadata["error.type"] = "\(String(reflecting: type(of: error)))"
                logger.warning(failure, metadata: metadata)
            }
        }
    }
}
