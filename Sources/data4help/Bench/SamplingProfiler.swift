import Foundation
import Synchronization

/// A CPU profile of this process while a bench phase runs (`--profile FILE`), for machines where
/// `perf` cannot see it: on the ones this project's figures come from, `perf stat -p` counts
/// 0.01 cores for a bench that `getrusage` counts at 0.85, and valgrind stops on the binary.
///
/// The kernel's profiling timer (`ITIMER_PROF`, the CPU time of the whole process: 250 signals a
/// CPU-second here, the kernel's tick) interrupts whichever thread is running, and the handler
/// records that thread's stack with glibc's `backtrace` into a buffer allocated beforehand: no
/// allocation, lock or Swift runtime call in the handler. Stacks end where an async function was
/// resumed (its caller is a continuation, not a frame): the leaf and the synchronous callers are
/// exact, a task's awaiting callers are not there.
///
/// The file holds the process's mappings of files, then one line per sample of hexadecimal
/// return addresses, innermost first; `Tools/profile-report.py` symbolizes and sums them.
enum SamplingProfiler {
    /// The most frames kept of a stack, and the most samples (about 6 CPU-minutes, 38 MB).
    fileprivate static let depth = 48
    fileprivate static let capacity = 100_000
    fileprivate nonisolated(unsafe) static var frames: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
    fileprivate nonisolated(unsafe) static var depths: UnsafeMutablePointer<Int32>?
    fileprivate static let taken = Atomic<Int>(0)
    /// glibc's `backtrace` (execinfo.h, which the Glibc module does not bring), found at start.
    fileprivate typealias Backtrace = @convention(c) (UnsafeMutablePointer<UnsafeMutableRawPointer?>, Int32) -> Int32
    fileprivate nonisolated(unsafe) static var backtrace: Backtrace?

    /// Starts sampling (once a process).
    static func start() {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "backtrace") else { return }  // RTLD_DEFAULT
        let backtrace = unsafeBitCast(symbol, to: Backtrace.self)
        Self.backtrace = backtrace
        frames = .allocate(capacity: capacity * depth)
        depths = .allocate(capacity: capacity)
        depths?.initialize(repeating: 0, count: capacity)
        _ = taken.load(ordering: .relaxed)
        // The first `backtrace` loads the unwinder (and allocates): not in the handler.
        var warm = [UnsafeMutableRawPointer?](repeating: nil, count: 4)
        _ = backtrace(&warm, 4)
        var action = sigaction()
        action.__sigaction_handler.sa_handler = onProfilingSignal
        action.sa_flags = SA_RESTART
        sigemptyset(&action.sa_mask)
        sigaction(SIGPROF, &action, nil)
        var timer = itimerval(it_interval: timeval(tv_sec: 0, tv_usec: 4_000), it_value: timeval(tv_sec: 0, tv_usec: 4_000))
        setitimer(__itimer_which_t(ITIMER_PROF.rawValue), &timer, nil)
    }

    /// Stops sampling and writes the samples to `path`: how many there were.
    @discardableResult
    static func stop(writingTo path: String) throws -> Int {
        var off = itimerval()
        setitimer(__itimer_which_t(ITIMER_PROF.rawValue), &off, nil)
        guard let frames, let depths else { return 0 }
        let count = min(taken.load(ordering: .relaxed), capacity)
        var text = "# data4help profile: the mappings of files, then one sample a line (return addresses, innermost first)\n"
        // Read to its end: Foundation's `String(contentsOfFile:)` stops after the first page of a
        // file that reports no size, as /proc's do.
        let maps =
            (try? FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/self/maps")).readToEnd())
            .flatMap { String(data: $0, encoding: .utf8) } ?? ""
        for line in maps.split(separator: "\n") where line.contains(" /") {
            text += "map \(line)\n"
        }
        for sample in 0..<count {
            let stack = UnsafeBufferPointer(start: frames + sample * depth, count: min(max(0, Int(truncatingIfNeeded: depths[sample])), depth))
            text += stack.map { String(UInt(bitPattern: $0), radix: 16) }.joined(separator: " ") + "\n"
        }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return count
    }
}

/// The signal handler: one stack into the next free slot.
private func onProfilingSignal(_: Int32) {
    let index = SamplingProfiler.taken.add(1, ordering: .relaxed).oldValue
    guard index < SamplingProfiler.capacity, let frames = SamplingProfiler.frames, let depths = SamplingProfiler.depths,
        let backtrace = SamplingProfiler.backtrace
    else { return }
    depths[index] = backtrace(frames + index * SamplingProfiler.depth, Int32(truncatingIfNeeded: SamplingProfiler.depth))
}
