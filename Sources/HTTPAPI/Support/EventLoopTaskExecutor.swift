import NIOCore

/// Runs a task's jobs on one NIO event loop: a read's handler runs on its connection's loop
/// instead of Swift's cooperative pool (see `RequestTimeoutMiddleware`).
///
/// Every `await` of database I/O or of the request's channel otherwise crosses between the two
/// pools twice (the continuation is resumed on the pool, the write is handed back to a loop),
/// each a thread wake-up; here the job is queued on the loop, which is already awake with the
/// connection's work. Measured with `data4help bench reads` (release, alternated in one session,
/// 20 s a path): `/me` 5,154–5,990 → 6,044–6,898 req/s, the listing 3,266–3,300 → 3,502–3,925.
///
/// A job run here holds the loop while it runs: what the handler computes between its awaits
/// delays that loop's other connections. Reads are short; request bodies (uploads, imports) and
/// their parsing stay on the pool.
final class EventLoopTaskExecutor: TaskExecutor {
    let loop: any EventLoop

    init(_ loop: any EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
