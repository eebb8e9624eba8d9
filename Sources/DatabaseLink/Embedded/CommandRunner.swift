import CSpawn
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs the PostgreSQL command-line tools, as another user when needed.
///
/// `initdb` and `postgres` refuse to run as root, so when this process is root every command
/// goes through `runuser -u <user> --`.
///
/// Spawned with `posix_spawn`, closing every descriptor above stderr in the child: `pg_ctl start`
/// leaves a server running, and any descriptor it inherited from us (Foundation's `Process`
/// passes one to watch for the child's exit) would stay open for the server's whole life.
package struct CommandRunner: Sendable {
    /// The unprivileged account to run as, or nil to run as ourselves.
    let runAsUser: String?
    let workingDirectory: URL

    package struct Failure: Error, CustomStringConvertible {
        let command: String
        let status: Int32
        let output: String
        package var description: String { "\(command) exited with status \(status): \(output)" }
    }

    /// Runs the program to completion and returns what it printed (stdout and stderr together).
    @discardableResult
    func run(_ program: String, _ arguments: [String]) throws -> String {
        let argv = (runAsUser.map { ["/usr/sbin/runuser", "-u", $0, "--"] } ?? []) + [program] + arguments
        let (status, printed): (Int32, Data)
        do {
            (status, printed) = try Self.capture(argv, errorsToo: true, in: workingDirectory.path)
        } catch let failure as Failure {
            throw Failure(command: program, status: failure.status, output: failure.output)
        }
        let output = String(decoding: printed, as: UTF8.self)
        guard status == 0 else {
            throw Failure(
                command: URL(fileURLWithPath: program).lastPathComponent, status: status,
                output: output.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return output
    }

    /// Runs `argv` to its end (`spawn`) and returns its exit status and what it printed on
    /// standard output (and standard error when `errorsToo`; else that goes to ours), collected in
    /// a temporary file.
    package static func capture(
        _ argv: [String], input: String = "/dev/null", errorsToo: Bool, in directory: String
    ) throws -> (
        status: Int32, output: Data
    ) {
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("data4help-\(UUID().uuidString).out").path
        let outputFD = open(outputPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard outputFD >= 0 else { throw Failure(command: argv.first ?? "", status: -1, output: "cannot create \(outputPath)") }
        defer { unlink(outputPath) }
        let status: Int32
        do {
            defer { close(outputFD) }
            status = try spawn(argv, input: input, output: outputFD, error: errorsToo ? outputFD : 2, in: directory)
        }
        return (status, (try? Data(contentsOf: URL(fileURLWithPath: outputPath))) ?? Data())
    }

    /// Runs `argv` (its first element a path) to its end with `posix_spawn`: standard input read
    /// from the file at `input`, standard output and error written to the descriptors given,
    /// every other descriptor closed in the child. Returns the exit status, or minus the signal
    /// that ended the program. Tests run the programs they check against through this too:
    /// Foundation's `Process.run()` on Linux reads past a buffer while listing `/proc/self/fd`
    /// and crashed a test process that had many descriptors open (swift-corelibs-foundation
    /// pull request 5472, not in this toolchain).
    package static func spawn(_ argv: [String], input: String = "/dev/null", output: Int32, error: Int32, in directory: String) throws -> Int32 {
        guard let program = argv.first else { throw Failure(command: "", status: -1, output: "no program") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, input, O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, output, 1)
        posix_spawn_file_actions_adddup2(&actions, error, 2)
        data4help_spawn_addclosefrom(&actions, 3)
        data4help_spawn_addchdir(&actions, directory)

        var cArguments = argv.map { strdup($0) }
        cArguments.append(nil)
        defer { cArguments.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, program, &actions, nil, cArguments, environ)
        guard spawned == 0 else {
            throw Failure(command: program, status: -1, output: "cannot start: \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        return status & 0x7f == 0 ? (status >> 8) & 0xff : -(status & 0x7f)
    }

    /// Whether the command succeeds (exit status 0), without throwing.
    func succeeds(_ program: String, _ arguments: [String]) -> Bool {
        (try? run(program, arguments)) != nil
    }
}
