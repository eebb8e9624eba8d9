import DatabaseLink
import Foundation

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
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("filter-\(UUID().uuidString)")
        try Data(bytes).write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        let (status, output) = try CommandRunner.capture(
            ["/usr/bin/env"] + command, input: input.path, errorsToo: false, in: FileManager.default.temporaryDirectory.path)
        guard status == 0 else { throw Failed(command: command, status: status) }
        return Array(output)
    }

    /// CPython's zlib reading a stream of `windowBits` (31: gzip; 15: zlib's format).
    public static func pythonInflate(_ bytes: [UInt8], windowBits: Int) throws -> [UInt8] {
        try filter(
            bytes, through: ["python3", "-c", "import sys, zlib; sys.stdout.buffer.write(zlib.decompress(sys.stdin.buffer.read(), \(windowBits)))"])
    }
}
