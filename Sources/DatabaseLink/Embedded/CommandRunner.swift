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
struct CommandRunner: Sendable {
    /// The unprivileged account to run as, or nil to run as ourselves.
    let runAsUser: String?
    let workingDirectory: URL

    struct Failure: Error, CustomStringConvertible {
        let command: String
        let status: Int32
        let output: String
        var description: String { "\(command) exited with status \(status): \(output)" }
    }

    /// Runs the program to completion and returns what it printed (stdout and stderr together).
    @discardableResult
    func run(_ program: String, _ arguments: [String]) throws -> String {
        let argv = (runAsUser.map { ["/usr/sbin/runuser", "-u", $0, "--"] } ?? []) + [program] + arguments
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("data4help-\(UUID().uuidString).out").path
        let outputFD = open(outputPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard outputFD >= 0 else { throw Failure(command: program, status: -1, output: "cannot create \(outputPath)") }
        defer { unlink(outputPath) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outputFD, 1)
        posix_spawn_file_actions_adddup2(&actions, outputFD, 2)
        data4help_spawn_addclosefrom(&actions, 3)
        data4help_spawn_addchdir(&actions, workingDirectory.path)

        var cArguments = argv.map { strdup($0) }
        cArguments.append(nil)
        defer { cArguments.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, cArguments, environ)
        close(outputFD)
        guard spawned == 0 else {
            throw Failure(command: program, status: -1, output: "cannot start: \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let exited = status & 0x7f == 0
        let exitCode = (status >> 8) & 0xff
        guard exited, exitCode == 0 else {
            throw Failure(
                command: URL(fileURLWithPath: program).lastPathComponent,
                status: exited ? exitCode : -(status & 0x7f),
                output: output.trimmingCharacters(in: .whitespacesAndNewlines)
            )
        }
        return output
    }

    /// Whether the command succeeds (exit status 0), without throwing.
    func succeeds(_ program: String, _ arguments: [String]) -> Bool {
        (try? run(program, arguments)) != nil
    }
}
