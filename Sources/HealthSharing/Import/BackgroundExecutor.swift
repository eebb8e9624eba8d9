import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Threads of their own, at a lower operating-system priority, that run the jobs of tasks which
/// prefer them (`withTaskExecutorPreference`, `Task(executorPreference:)`): an import's reading —
/// seconds of synchronous work — then competes for the cores with the requests of everyone else
/// at a tenth of their weight (Linux's nice 10) instead of taking one of the cooperative pool's
/// threads, which also run every request. Awaiting other work (the database) leaves a thread free.
///
/// Measured with `bench import` (others' upload p99 during / without the import, closed loop):
/// reading on the pool × 2.21 and × 2.37, on this thread × 1.91 and × 2.00 at the same records/s;
/// preparing the batches here too (a second thread) gave × 1.99 but 23 % fewer records/s.
package final class BackgroundExecutor: TaskExecutor, @unchecked Sendable {
    /// The executor imports read on.
    package static let imports = BackgroundExecutor(name: "data4help-imports", threads: 1, nice: 10)

    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var jobs: [UnownedJob] = []

    /// Starts the threads: `nice` is added to their priority (Linux keeps it per thread).
    init(name: String, threads: Int, nice: Int32) {
        for _ in 0..<threads {
            let thread = Thread { [self] in
                #if canImport(Glibc)
                // On Linux a nice value belongs to the thread that sets it (see setpriority(2)).
                _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice)
                #endif
                run()
            }
            thread.name = name
            thread.start()
        }
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func run() -> Never {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
