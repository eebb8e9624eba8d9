import Foundation
import NIOCore
import NIOPosix

/// CPU time of chosen threads of this process (`/proc/self/task/TID/stat`).
enum ThreadCPU {
    /// The thread ids of a group's event loops.
    static func threads(of group: MultiThreadedEventLoopGroup) async throws -> [Int] {
        var ids: [Int] = []
        for loop in group.makeIterator() {
            let link = try await loop.submit { try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self") }.get()
            if let id = link.split(separator: "/").last.flatMap({ Int($0) }) { ids.append(id) }
        }
        return ids
    }

    /// User and system seconds of `threads` so far.
    static func seconds(of threads: [Int]) -> Double {
        threads.reduce(0) { total, thread in
            guard let stat = try? String(contentsOfFile: "/proc/self/task/\(thread)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return total }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return total }
            return total + (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
    }
}

/// User and system CPU time of this process so far.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// CPU time every core of the machine has spent busy so far (`/proc/stat`: all but idle and
/// iowait, so the time the hypervisor gave to other machines — steal — included), nil where
/// there is no such file.
func machineBusySeconds() -> Double? {
    guard let ticks = machineTicks(), ticks.count >= 5 else { return nil }
    return (ticks.reduce(0, +) - ticks[3] - ticks[4]) / Double(sysconf(Int32(_SC_CLK_TCK)))  // less idle, iowait
}

/// CPU time the hypervisor gave to other machines while this one wanted it (`/proc/stat`'s
/// steal), nil where there is no such figure. On a shared virtual machine it comes and goes:
/// around one `bench live` run it was 0.3–0.8 of 2 cores over spans of 5 seconds, then near 0.
func machineStolenSeconds() -> Double? {
    guard let ticks = machineTicks(), ticks.count >= 8 else { return nil }
    return ticks[7] / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// The machine's line of `/proc/stat`, in ticks: user, nice, system, idle, iowait, irq, softirq,
/// steal, …
private func machineTicks() -> [Double]? {
    guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
        let line = stat.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") })
    else { return nil }
    return line.split(separator: " ").dropFirst().compactMap { Double($0) }
}

/// This process's CPU time and the whole machine's, read together: a phase's share of each is
/// `CPUTime.now.since(start)`.
struct CPUTime {
    let process: Double
    /// Nil where there is no `/proc/stat`.
    let machine: Double?

    static var now: CPUTime { CPUTime(process: processCPUSeconds(), machine: machineBusySeconds()) }

    /// Seconds of this process and of the machine (nan without `/proc/stat`) since `start`.
    func since(_ start: CPUTime) -> (process: Double, machine: Double) {
        (process - start.process, machine.flatMap { end in start.machine.map { end - $0 } } ?? .nan)
    }
}
