import Foundation
import Subprocess
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Runs the PostgreSQL command-line tools, as another user when needed.
///
/// `initdb` and `postgres` refuse to run as root, so when this process is root every command
/// goes through `runuser -u <user> --`.
///
/// Spawned by swift-subprocess, which closes every descriptor above stderr in the child (`pg_ctl
/// start` leaves a server running: a descriptor of ours it inherited would stay open for the
/// server's whole life) and waits for the child's end without holding a thread.
package struct CommandRunner: Sendable {
    /// The unprivileged account to run as, or nil to run as ourselves.
    let runAsUser: String?
    let workingDirectory: URL

    /// What the tools print is their diagnostics, a few lines; more than this is refused.
    static let outputLimit = 1 << 20

    package struct Failure: Error, CustomStringConvertible {
        let command: String
        let status: String
        let output: String
        package var description: String { "\(command) ended with \(status): \(output)" }
    }

    /// Runs the program to its end and returns what it printed (stdout and stderr together).
    @discardableResult
    func run(_ program: String, _ arguments: [String]) async throws -> String {
        let argv = (runAsUser.map { ["/usr/sbin/runuser", "-u", $0, "--"] } ?? []) + [program] + arguments
        let result = try await Subprocess.run(
            .path(FilePath(argv[0])), arguments: Arguments(Array(argv.dropFirst())),
            workingDirectory: FilePath(workingDirectory.path),
            input: .none, output: .string(limit: Self.outputLimit), error: .combinedWithOutput)
        let output = result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
        guard result.terminationStatus.isSuccess else {
            throw Failure(command: URL(fileURLWithPath: program).lastPathComponent, status: "\(result.terminationStatus)", output: output)
        }
        return output
    }

    /// Whether the command succeeds (exit status 0), without throwing.
    func succeeds(_ program: String, _ arguments: [String]) async -> Bool {
        (try? await run(program, arguments)) != nil
    }
}
