import CZlibStream
import Foundation
import HTTPTypes
import NIOCore
import ZlibCoding

/// A request body's content coding (RFC 9110 §8.4), as `Content-Encoding` names it. A body (JSON,
/// a course's file) may come gzip-coded (or zlib's `deflate`): a phone's upload of 1 Hz heart rate is about a
/// fourteenth of its size that way (92 kB of items → 6.8 kB). It is inflated, within the same
/// limit as a plain body, before anything reads it.
///
/// zlib is called directly rather than through a wrapper package: the one that resolves here
/// (compress-nio) returns a stream cut short as if it had ended (zlib's `Z_OK` with all input
/// read), and this must tell the two apart.
package enum ContentCoding: Equatable, Sendable {
    case identity, gzip, deflate

    /// What `Accept-Encoding` lists when a coding is refused.
    static let accepted = "gzip, deflate"

    /// The coding `Content-Encoding` names (`identity` when it is absent); nil for any other
    /// coding, or more than one.
    package init?(header: String?) {
        let codings = (header ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty && $0 != "identity" }
        switch codings {
        case []: self = .identity
        case ["gzip"], ["x-gzip"]: self = .gzip
        case ["deflate"]: self = .deflate
        default: return nil
        }
    }

    /// The `415` for a body in a coding that is not decoded where it was sent (RFC 7694): what is,
    /// in `Accept-Encoding` (`identity`: only bodies as they are).
    static func refusal(accepting accepted: String, detail: String) -> Problem {
        Problem(
            .unsupportedMediaType, slug: "unsupported-content-encoding", title: "Unsupported content encoding", detail: detail,
            headers: [.acceptEncoding: accepted])
    }

    /// Where a body is read as it comes — an import's file, streamed to the database; a portal's
    /// form — a coded one is refused, never stored or read still coded.
    static func requireIdentity(_ headers: HTTPFields, detail: String) throws(Problem) {
        guard ContentCoding(header: headers[.contentEncoding]) == .identity else { throw refusal(accepting: "identity", detail: detail) }
    }

    package enum Failure: Error, Equatable {
        /// Decoded, the body is longer than the limit.
        case tooLarge
        /// Not a whole stream of this coding: the reason, in words.
        case corrupt(String)
        /// zlib could not get the memory to inflate: the server's trouble, not the body's.
        case noMemory
    }

    /// The zlib format of the coding's stream (nil: not coded), which names its window bits too.
    package var format: ZlibDeflate.Format? {
        switch self {
        case .identity: nil
        case .gzip: .gzip
        case .deflate: .zlib
        }
    }

    /// The body decoded: at most `limit` bytes, or `Failure.tooLarge` as soon as a byte more is
    /// produced (a small body that inflates to gigabytes costs `limit` bytes, never more). The
    /// stream must end exactly where the body does. zlib reads the body where it lies and writes
    /// into the buffer returned: neither side is copied.
    package func decode(_ body: ByteBuffer, limit: Int) throws(Failure) -> ByteBuffer {
        guard let format else { return body }
        guard UInt32(exactly: body.readableBytes) != nil, limit >= 0, limit < 0xFFFF_FFFF else { throw .tooLarge }
        var stream = z_stream()
        guard czlib_inflate_init(&stream, format.windowBits) == Z_OK else { throw .noMemory }
        defer { inflateEnd(&stream) }

        // One byte beyond the limit: producing it is what tells a body over the limit.
        let capacity = limit + 1
        var output = ByteBufferAllocator().buffer(capacity: min(capacity, max(16_384, body.readableBytes * 16)))
        var status = Z_OK
        body.withUnsafeReadableBytes { input in
            // zlib's `next_in` is not `const` in its Swift import; inflate only reads through it.
            stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
            stream.avail_in = UInt32(truncatingIfNeeded: input.count)  // checked above
            repeat {
                let room = capacity - output.writerIndex
                guard room > 0 else { break }
                output.writeWithUnsafeMutableBytes(minimumWritableBytes: min(room, max(output.writerIndex, 16_384))) { space in
                    let offered = min(space.count, room)  // ≤ limit + 1 < 2^32
                    stream.next_out = space.bindMemory(to: Bytef.self).baseAddress
                    stream.avail_out = UInt32(truncatingIfNeeded: offered)
                    status = inflate(&stream, Z_NO_FLUSH)
                    return offered - Int(stream.avail_out)
                }
            } while status == Z_OK || (status == Z_BUF_ERROR && stream.avail_in > 0 && stream.avail_out == 0)
        }
        guard output.readableBytes <= limit else { throw .tooLarge }
        switch status {
        case Z_STREAM_END:
            guard stream.avail_in == 0 else { throw .corrupt("has bytes after the end of its \(self) stream") }
            return output
        case Z_BUF_ERROR:
            throw .corrupt("ends before its \(self) stream does")
        case Z_MEM_ERROR:
            throw .noMemory
        default:
            throw .corrupt("is not \(self) data")
        }
    }
}
