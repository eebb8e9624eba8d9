public import Foundation
import OpenAPIRuntime

/// Uploads what an app hands over — from a HealthKit anchored query, a file, a BLE sensor — to the
/// server, and loses none of it: items are on the disk (`SyncQueue`) before `enqueue` returns, go up
/// in batches with their stable ids (a batch sent twice is stored once), and leave the disk only
/// when the server has acknowledged them.
///
/// While the server cannot take them it waits: as long as `Retry-After` says on `429` and `503`,
/// otherwise exponentially longer with full jitter (so that a thousand phones coming back online do
/// not knock together). A source resumes where it stopped from its persisted anchor
/// (`anchor(for:)`), and `Configuration.onProgress` hears every step.
///
/// ```swift
/// let engine = try SyncEngine(client: .data4Help(serverURL: url, credential: { token }), directory: queueURL)
/// try await engine.enqueue(items, anchor: (source: "healthkit.heartRate", value: anchorData))
/// try await engine.drain()   // uploads everything queued, waiting out outages
/// ```
public actor SyncEngine {
    public struct Configuration: Sendable {
        /// Items per upload request (the server takes up to 10,000).
        public var batchSize: Int
        /// The first wait after a failure; each further one doubles it, up to `maximumBackoff`.
        public var initialBackoff: Duration
        public var maximumBackoff: Duration
        /// The longest wait honoured from a `Retry-After` (a misconfigured proxy's day is not waited).
        public var maximumRetryAfter: Duration
        /// Hears every step: uploading, waiting (and why), stored, stopped.
        public var onProgress: (@Sendable (SyncProgress) -> Void)?
        /// How the engine waits (tests pass a recording clock).
        public var sleep: @Sendable (Duration) async throws -> Void
        /// A random fraction in 0...1 for jitter.
        public var random: @Sendable () -> Double

        public init(
            batchSize: Int = 1000, initialBackoff: Duration = .milliseconds(500), maximumBackoff: Duration = .seconds(60),
            maximumRetryAfter: Duration = .seconds(3600), onProgress: (@Sendable (SyncProgress) -> Void)? = nil,
            sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
            random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }
        ) {
            self.batchSize = min(max(1, batchSize), 10_000)
            self.initialBackoff = initialBackoff
            self.maximumBackoff = maximumBackoff
            self.maximumRetryAfter = maximumRetryAfter
            self.onProgress = onProgress
            self.sleep = sleep
            self.random = random
        }
    }

    private let client: Client
    private let configuration: Configuration
    private let queue: SyncQueue
    private var progress: SyncProgress
    private var batchSize: Int
    private var draining: Task<Void, any Error>?
    private var waitingForItems: [CheckedContinuation<Void, Never>] = []

    /// An engine whose queue lives in `directory` (created if missing; the items and anchors a
    /// previous run left there are picked up).
    public init(client: Client, directory: URL, configuration: Configuration = Configuration()) throws {
        self.client = client
        self.configuration = configuration
        self.queue = try SyncQueue(directory: directory)
        self.batchSize = configuration.batchSize
        self.progress = SyncProgress(state: .idle, pending: queue.pending)
    }

    /// Where things stand now.
    public var current: SyncProgress { progress }

    /// The anchor saved with the last items `source` handed over, to resume its query from.
    public func anchor(for source: String) -> Data? { queue.anchor(for: source) }

    /// The items the server refused so far, with its reasons.
    public func rejectedItems() throws -> [RejectedItem] { try queue.rejectedItems() }

    /// Hands `items` over; on return they are on the disk, and so is `anchor` — the position in
    /// `anchor.source` after them. Uploading happens in `drain()`/`run()`.
    public func enqueue(_ items: [SyncItem], anchor: (source: String, value: Data)? = nil) throws {
        try queue.append(items, anchor: anchor)
        progress.pending = queue.pending
        report()
        let waiters = waitingForItems
        waitingForItems = []
        for waiter in waiters { waiter.resume() }
    }

    /// Uploads until nothing is pending, waiting out outages and rate limits; returns then. Throws
    /// `SyncError` when the server will not take the items (`unauthorised`: a new credential is
    /// needed; they stay queued), or `CancellationError` when cancelled (they stay queued too).
    /// Called while a drain runs, it waits for that one; cancelling any caller stops the drain.
    public func drain() async throws {
        let task: Task<Void, any Error>
        if let draining {
            task = draining
        } else {
            task = Task { try await self.uploadPending() }
            draining = task
        }
        defer { if draining == task { draining = nil } }
        try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }

    /// Drains, then waits for new items and drains again, until cancelled or stopped by `SyncError`.
    public func run() async throws {
        while true {
            try await drain()
            try Task.checkCancellation()
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    if queue.pending > 0 || Task.isCancelled { continuation.resume() } else { waitingForItems.append(continuation) }
                }
            } onCancel: {
                Task { await self.wakeWaiters() }
            }
        }
    }

    private func wakeWaiters() {
        let waiters = waitingForItems
        waitingForItems = []
        for waiter in waiters { waiter.resume() }
    }

    private func uploadPending() async throws {
        var failures = 0
        while let segment = try queue.oldest() {
            try Task.checkCancellation()
            let start = segment.acknowledged
            let end = min(start + batchSize, segment.items.count)
            let batch = Array(segment.items[start..<end])
            progress.state = .uploading(items: batch.count)
            report()
            progress.requests += 1
            switch await send(batch) {
            case .stored(let result):
                failures = 0
                let refused = result.rejected.compactMap { entry -> (item: SyncItem, reason: String)? in
                    guard entry.index >= 0, entry.index < batch.count else { return nil }
                    return (batch[entry.index], entry.reason)
                }
                try queue.recordRejected(refused)
                try queue.acknowledge(segment.sequence, through: end)
                progress.accepted += result.accepted
                progress.duplicates += result.duplicates
                progress.rejected += refused.count
                progress.pending = queue.pending
            case .refused(let status, let detail):
                // The server will never take this batch as it is: kept in rejected.jsonl, not retried.
                try queue.recordRejected(batch.map { ($0, "refused with \(status): \(detail)") })
                try queue.acknowledge(segment.sequence, through: end)
                progress.rejected += batch.count
                progress.pending = queue.pending
            case .tooLarge:
                if batchSize > 1 {
                    batchSize = max(1, batchSize / 2)
                } else {
                    try queue.recordRejected(batch.map { ($0, "too large for the server") })
                    try queue.acknowledge(segment.sequence, through: end)
                    progress.rejected += batch.count
                }
            case .retry(let reason, let retryAfter):
                let wait: Duration
                if let retryAfter {
                    // Honour the server's wait, never less; a little jitter above it spreads the clients it told the same.
                    let asked = min(Duration.seconds(retryAfter), configuration.maximumRetryAfter)
                    wait = asked + min(.seconds(1), asked * 0.1) * configuration.random()
                } else {
                    failures += 1
                    wait = backoff(after: failures)
                }
                progress.state = .waiting(wait, because: reason)
                progress.waits += 1
                report()
                try await configuration.sleep(wait)
            case .stop(let error):
                progress.state = .stopped(error)
                report()
                throw error
            }
        }
        progress.state = .idle
        report()
    }

    /// Full jitter: a random wait between zero and the doubled limit (AWS's "Exponential Backoff
    /// And Jitter"), so that clients which failed together do not retry together.
    private func backoff(after failures: Int) -> Duration {
        let doublings = min(failures - 1, 30)
        let limit = min(configuration.initialBackoff * (1 << doublings), configuration.maximumBackoff)
        return limit * configuration.random()
    }

    private enum Outcome {
        case stored(Components.Schemas.DataUploadResult)
        case refused(status: Int, detail: String)
        case tooLarge
        case retry(SyncProgress.WaitReason, retryAfter: Int?)
        case stop(SyncError)
    }

    private func send(_ batch: [SyncItem]) async -> Outcome {
        let output: Operations.UploadData.Output
        do {
            output = try await client.uploadData(body: .json(.init(items: batch.map(\.uploadPayload))))
        } catch {
            return .retry(.unreachable(String(describing: error)), retryAfter: nil)
        }
        do {
            switch output {
            case .ok(let ok): return .stored(try ok.body.json)
            case .tooManyRequests(let response): return .retry(.rateLimited, retryAfter: response.headers.retryAfter)
            case .serviceUnavailable(let response): return .retry(.unavailable, retryAfter: response.headers.retryAfter)
            case .contentTooLarge: return .tooLarge
            case .unauthorized: return .stop(.unauthorised)
            case .forbidden(let response): return .stop(.forbidden(Self.detail(try? response.body.applicationProblemJson)))
            case .notFound: return .stop(.accountGone)
            case .badRequest(let response): return .refused(status: 400, detail: Self.detail(try? response.body.applicationProblemJson))
            case .unprocessableContent(let response): return .refused(status: 422, detail: Self.detail(try? response.body.applicationProblemJson))
            case .unsupportedMediaType: return .stop(.forbidden("the server does not take this kit's uploads (415)"))
            case .undocumented(let status, _):
                // A proxy's 502/504, a server error: the items are fine, the way to the server is not.
                return .retry(.serverError(status), retryAfter: nil)
            }
        } catch {
            return .retry(.unreachable(String(describing: error)), retryAfter: nil)
        }
    }

    private static func detail(_ problem: Components.Schemas.Problem?) -> String {
        problem?.detail ?? problem?.title ?? "no detail"
    }

    private func report() { configuration.onProgress?(progress) }
}

/// Why the engine stopped uploading; the items stay queued.
public enum SyncError: Error, Sendable, Equatable {
    /// `401`: the credential is no longer valid (signed out, revoked): sign in again, then drain.
    case unauthorised
    /// `403`: this credential may not upload (a third party's).
    case forbidden(String)
    /// `404`: the account is gone.
    case accountGone
    /// The queue's directory could not be written.
    case storage(String)
}

/// The engine's state and counts since it was opened (`pending` is what the disk holds).
public struct SyncProgress: Sendable, Equatable {
    public enum State: Sendable, Equatable {
        case idle
        case uploading(items: Int)
        case waiting(Duration, because: WaitReason)
        case stopped(SyncError)
    }

    public enum WaitReason: Sendable, Equatable {
        /// `429`.
        case rateLimited
        /// `503`: the server's database is restarting or the request timed out there.
        case unavailable
        /// Another status the server or a proxy answered (`500`, `502`, `504`).
        case serverError(Int)
        /// No answer: offline, connection refused or cut, timeout.
        case unreachable(String)
    }

    public var state: State
    /// Items on the disk not yet acknowledged.
    public var pending: Int
    public var accepted = 0
    public var duplicates = 0
    public var rejected = 0
    /// Upload requests sent and waits taken.
    public var requests = 0
    public var waits = 0
}

extension SyncItem {
    var uploadPayload: Components.Schemas.DataUpload.ItemsPayloadPayload {
        switch self {
        case .sample(let sample):
            let value: Components.Schemas.HealthSampleUpload.ValuePayload =
                switch sample.value {
                case .number(let number): .case1(number)
                case .stage(let stage): .case2(stage)
                }
            return .init(
                value1: .init(
                    id: sample.id, _type: sample.type, value: value, unit: sample.unit, start: sample.start, end: sample.end, source: sample.source))
        case .location(let fix):
            return .init(
                value2: .init(
                    id: fix.id, latitude: fix.latitude, longitude: fix.longitude, accuracy: fix.accuracy, altitude: fix.altitude, time: fix.time))
        }
    }
}
