import CZlibStream

/// A whole body compressed by the system's zlib at its default level: what Data4HelpKit sends as
/// `Content-Encoding: gzip`, and the bench's load generator too. (Reading coded bodies, within the
/// server's limits, is the server's `ContentCoding.decode`, with these formats: the kit never inflates.)
package enum ZlibDeflate {
    package enum Format: Sendable {
        /// RFC 1952: `Content-Encoding: gzip`.
        case gzip
        /// RFC 1950 (zlib's format): `Content-Encoding: deflate`.
        case zlib

        /// zlib's window bits: 15 (32 KiB), +16 for gzip's header and trailer (inflating too).
        package var windowBits: Int32 {
            switch self {
            case .gzip: 15 + 16
            case .zlib: 15
            }
        }
    }

    /// `bytes` compressed in one call: nil when zlib cannot start (no memory) or either side would
    /// not fit zlib's 32-bit counts (4 GiB).
    package static func compress(_ bytes: [UInt8], format: Format) -> [UInt8]? {
        guard let inputCount = UInt32(exactly: bytes.count) else { return nil }
        var stream = z_stream()
        guard czlib_deflate_init(&stream, Z_DEFAULT_COMPRESSION, format.windowBits) == Z_OK else { return nil }
        defer { deflateEnd(&stream) }
        // deflateBound: the most a single Z_FINISH call can write, so that one call ends the stream.
        guard let bound = Int(exactly: deflateBound(&stream, UInt(inputCount))), let outputCount = UInt32(exactly: bound) else { return nil }
        var input = bytes
        var output = [UInt8](repeating: 0, count: bound)
        let status = input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                stream.next_in = source.baseAddress
                stream.avail_in = inputCount
                stream.next_out = target.baseAddress
                stream.avail_out = outputCount
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { return nil }
        output.removeLast(Int(stream.avail_out))
        return output
    }
}
