import Foundation
import Testing

@testable import HealthSharing

#if canImport(Glibc)
import Glibc
#endif

/// Imports read on a thread of their own at a lower priority than requests.
@Suite struct BackgroundExecutorTests {
    /// The threads' nice value, read from inside tasks that prefer the executor (structured or
    /// not, before and after a suspension); they are not the cooperative pool's threads.
    @Test func tasksThatPreferItRunOnItsLowerPriorityThreads() async throws {
        #if canImport(Glibc)
        let outside = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        let expected = min(outside + 10, 19)
        let (before, after, thread) = await withTaskExecutorPreference(BackgroundExecutor.imports) {
            let before = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
            try? await Task.sleep(for: .milliseconds(5))
            return (before, getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0), pthread_self())
        }
        #expect(before == expected && after == expected, "nice \(before), \(after) on the import threads, \(outside) outside")
        #expect(pthread_equal(thread, pthread_self()) == 0)
        let unstructured = await Task(executorPreference: BackgroundExecutor.imports) {
            getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        }.value
        #expect(unstructured == expected)
        #endif
    }
}
