import DatabaseLink
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Programs others wrote (GNU gzip, CPython's zlib), run on bytes: what tests check our coders
/// against.
public enum ExternalProgram {
    public struct Failed: Error, CustomStringConvertible {
        public let command: [String]
        public let status: Int32
        public var description: String { "\(command.joined(separator: " ")) exited with \(status)" }
    }

    /// `bytes` through the command's standard input, its standard output back (spawned as the
    /// server spawns PostgreSQL's tools: `CommandRunner.spawn`, not Foundation's `Process`).
    public static func filter(_ bytes: [UInt8], through command: [String]) throws -> [UInt8] {
        let directory = FileManager.default.temporaryDirectory
        let (input, output) = (
            directory.appendingPathComponent("filter-\(UUID().uuidString).in"), directory.appendingPathComponent("filter-\(UUID().uuidString).out")
        )
        try Data(bytes).write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        let outputFD = open(output.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard outputFD >= 0 else { throw Failed(command: command, status: -1) }
        defer { try? FileManager.default.removeItem(at: output) }
        let status: Int32
        do {
            defer { close(outputFD) }
            status = try CommandRunner.spawn(["/usr/bin/env"] + command, input: input.path, output: outputFD, error: 2, in: directory.path)
        }
        guard status == 0 else { throw Failed(command: command, status: status) }
        return Array(try Data(contentsOf: output))
    }

    /// CPython's zlib reading a stream of `windowBits` (31: gzip; 15: zlib's format).
    public static func pythonInflate(_ bytes: [UInt8], windowBits: Int) throws -> [UInt8] {
        try filter(
            bytes, through: ["python3", "-c", "import sys, zlib; sys.stdout.buffer.write(zlib.decompress(sys.stdin.buffer.read(), \(windowBits)))"])
    }
}
