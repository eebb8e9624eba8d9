import Foundation

/// Programs others wrote (GNU gzip, CPython's zlib), run on bytes: what tests check our coders
/// against.
public enum ExternalProgram {
    public struct Failed: Error, CustomStringConvertible {
        public let command: [String]
        public let status: Int32
        public var description: String { "\(command.joined(separator: " ")) exited with \(status)" }
    }

    /// `bytes` through the command's standard input, its standard output back.
    public static func filter(_ bytes: [UInt8], through command: [String]) throws -> [UInt8] {
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("filter-\(UUID().uuidString)")
        try Data(bytes).write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = command
        process.standardInput = try FileHandle(forReadingFrom: input)
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let result = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Failed(command: command, status: process.terminationStatus) }
        return Array(result)
    }

    /// CPython's zlib reading a stream of `windowBits` (31: gzip; 15: zlib's format).
    public static func pythonInflate(_ bytes: [UInt8], windowBits: Int) throws -> [UInt8] {
        try filter(
            bytes, through: ["python3", "-c", "import sys, zlib; sys.stdout.buffer.write(zlib.decompress(sys.stdin.buffer.read(), \(windowBits)))"])
    }
}
