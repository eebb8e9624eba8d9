import Foundation
import Subprocess
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A program kept running while a test talks to it (our server, Chromium, nginx, an SMTP relay),
/// started by swift-subprocess.
///
/// Not Foundation's `Process`: its `run()` on Linux reads past a buffer while listing
/// `/proc/self/fd` and crashed a test process that had many descriptors open
/// (swift-corelibs-foundation pull request 5472, not in this toolchain). swift-subprocess closes
/// every inherited descriptor in the child and learns of its end from a pidfd, holding no thread.
/// Its output goes to files, never to the test process's own: a child still running after the
/// test process died would otherwise hold `swift test`'s pipe open and hang it.
public final class ChildProcess: Sendable {
    public let processIdentifier: pid_t
    private let state: State
    /// The task that runs the program: it ends once swift-subprocess has reaped it.
    private let running: Task<Void, Never>

    /// How the program ended; nil while it runs.
    private final class State: Sendable {
        let ending = Mutex<Termination?>(nil)
    }

    /// How a program ended: its exit status, or the signal that ended it.
    public enum Termination: Hashable, Sendable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        init(_ status: TerminationStatus) {
            switch status {
            case .exited(let code): self = .exited(code)
            case .signaled(let signal): self = .signalled(signal)
            }
        }

        public var description: String {
            switch self {
            case .exited(let code): "exit status \(code)"
            case .signalled(let signal): "signal \(signal)"
            }
        }
    }

    private init(processIdentifier: pid_t, state: State, running: Task<Void, Never>) {
        self.processIdentifier = processIdentifier
        self.state = state
        self.running = running
    }

    /// Starts `executable` (a path) with `arguments`. `environment` nil inherits ours, else is
    /// the whole environment. Standard input is empty; standard output and error are appended
    /// to the files given (by default dropped).
    public static func start(
        _ executable: URL, _ arguments: [String], environment: [String: String]? = nil, workingDirectory: URL? = nil,
        output: URL? = nil, error: URL? = nil
    ) async throws -> ChildProcess {
        let configuration = Configuration(
            executable: .path(FilePath(executable.path)), arguments: Arguments(arguments),
            environment: environment.map { variables in
                .custom(Dictionary(uniqueKeysWithValues: variables.map { (Environment.Key(stringLiteral: $0.key), $0.value) }))
            } ?? .inherit,
            workingDirectory: workingDirectory.map { FilePath($0.path) })
        let outputFile = try openForAppending(output)
        let errorFile = try openForAppending(error)
        let (started, didStart) = AsyncThrowingStream.makeStream(of: pid_t.self)
        let state = State()
        let running = Task {
            do {
                let result = try await Subprocess.run(
                    configuration, input: .none, output: .fileDescriptor(outputFile, closeAfterSpawningProcess: true),
                    error: .fileDescriptor(errorFile, closeAfterSpawningProcess: true)
                ) { execution in
                    didStart.yield(execution.processIdentifier.value)
                    didStart.finish()
                }
                state.ending.withLock { $0 = Termination(result.terminationStatus) }
            } catch {
                didStart.finish(throwing: error)
                state.ending.withLock { $0 = $0 ?? .exited(-1) }
            }
        }
        var pids = started.makeAsyncIterator()
        guard let pid = try await pids.next() else { throw StartFailure(executable: executable.path) }
        return ChildProcess(processIdentifier: pid, state: state, running: running)
    }

    struct StartFailure: Error, CustomStringConvertible {
        let executable: String
        var description: String { "\(executable) did not start" }
    }

    private static func openForAppending(_ file: URL?) throws -> FileDescriptor {
        try FileDescriptor.open(
            FilePath(file?.path ?? "/dev/null"), .writeOnly, options: [.append, .create, .closeOnExec], permissions: [.ownerReadWrite])
    }

    /// Whether the program still runs (has not been reaped).
    public var isRunning: Bool { state.ending.withLock { $0 == nil } }

    /// How the program ended, or nil while it runs.
    public var terminationStatus: Termination? { state.ending.withLock { $0 } }

    /// Sends `signal` while the program runs. Not after swift-subprocess has told us it reaped it:
    /// its process id may then be another's. (Between its reaping and that news, microseconds,
    /// the id would have to be reused, after the kernel has cycled through every other.)
    public func send(_ signal: Int32) {
        state.ending.withLock { if $0 == nil { _ = kill(processIdentifier, signal) } }
    }

    /// SIGTERM, not waiting.
    public func terminate() { send(SIGTERM) }

    /// Waits until the program has ended and been reaped, without holding a thread.
    public func exited() async {
        await running.value
    }

    /// SIGTERM, and its end awaited.
    public func stop() async {
        terminate()
        await exited()
    }
}
