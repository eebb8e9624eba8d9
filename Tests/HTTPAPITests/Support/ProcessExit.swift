import Foundation

extension Process {
    /// Waits until the process has ended, without holding a thread. `waitUntilExit` spins a run
    /// loop on the calling thread; in a test's async code that thread is one of the (two, on these
    /// machines) cooperative threads every in-process server of the suite also runs on, so a child
    /// that takes seconds to exit on a loaded machine stalled every other test's requests — seen
    /// as requests answered 503 after the 30 s request timeout. Foundation reaps the child on its
    /// own queue; this only looks at `isRunning`.
    func exited() async {
        while isRunning {
            do { try await Task.sleep(for: .milliseconds(20)) } catch { return }  // cancelled: stop waiting
        }
    }

    /// Ends the process: SIGTERM, and its exit awaited.
    func stop() async {
        if isRunning { terminate() }
        await exited()
    }
}
