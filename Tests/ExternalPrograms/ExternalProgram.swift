import Foundation
import Subprocess

/// Programs others wrote (GNU gzip, CPython's zlib), run on bytes: what tests check our coders
/// against.
public enum ExternalProgram {
    public struct Failed: Error, CustomStringConvertible {
        public let command: [String]
        public let status: ChildProcess.Termination
        public var description: String { "\(command.joined(separator: " ")) ended with \(status)" }
    }

    /// `bytes` through the command's standard input (its first element a program looked up in
    /// `PATH`), its standard output back; what it says on standard error goes to ours.
    public static func filter(_ bytes: [UInt8], through command: [String]) async throws -> [UInt8] {
        let result = try await Subprocess.run(
            .name(command[0]), arguments: Arguments(Array(command.dropFirst())), input: .array(bytes),
            output: .bytes(limit: 1 << 30), error: .currentStandardError)
        guard result.terminationStatus.isSuccess else { throw Failed(command: command, status: ChildProcess.Termination(result.terminationStatus)) }
        return result.standardOutput
    }

    /// CPython's zlib reading a stream of `windowBits` (31: gzip; 15: zlib's format).
    public static func pythonInflate(_ bytes: [UInt8], windowBits: Int) async throws -> [UInt8] {
        try await filter(
            bytes, through: ["python3", "-c", "import sys, zlib; sys.stdout.buffer.write(zlib.decompress(sys.stdin.buffer.read(), \(windowBits)))"])
    }
}
