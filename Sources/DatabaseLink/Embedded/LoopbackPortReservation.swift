#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// Asks the kernel for a TCP port on 127.0.0.1 that nothing listens on right now.
///
/// The port is free only at the moment of asking: bind it at once. Where a server starts later
/// (a test's receiver that is "down" first), hold a `LoopbackPortReservation` instead.
package func freeLoopbackPort() throws(EmbeddedPostgresError) -> Int {
    let reservation = try LoopbackPortReservation()
    defer { reservation.release() }
    return reservation.port
}

/// A socket bound to a free port on 127.0.0.1 and not listening. While it is held, connections
/// to the port are refused — the server behind it is "down" — and nothing else can take the
/// port: neither a server binding port 0 nor an outgoing connection picking its local port
/// (with a released port, one of those did, on a busy test run, and the simulated dispatch
/// centre could never start). Release it right before the real server binds the port.
package final class LoopbackPortReservation: Sendable {
    package let port: Int
    private let descriptor: Mutex<Int32?>

    /// Binds a port below the kernel's ephemeral range, chosen at random, falling back to one
    /// the kernel chooses. The kernel hands out ephemeral ports to every `bind(port: 0)` and to
    /// every outgoing connection's local end, so a port from that range that is released for a
    /// child process to bind can be taken in between by any connection of a busy machine; below
    /// the range only another explicit choice like this one can take it.
    package init() throws(EmbeddedPostgresError) {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw .commandFailed("cannot open a socket to find a free port") }
        var bound: Int?
        if let ephemeral = Self.ephemeralRangeStart(), ephemeral > 2_048 {
            let range = max(1_024, ephemeral - 12_000)..<ephemeral
            for _ in 0..<64 where bound == nil {
                bound = Self.bind(fd, port: UInt16.random(in: UInt16(range.lowerBound)...UInt16(range.upperBound - 1)))
            }
        }
        guard let port = bound ?? Self.bind(fd, port: 0) else {
            close(fd)
            throw .commandFailed("cannot bind a loopback socket to find a free port")
        }
        self.port = port
        descriptor = Mutex(fd)
    }

    /// The first port of `net.ipv4.ip_local_port_range` (Linux), if it can be read.
    private static func ephemeralRangeStart() -> Int? {
        #if os(Linux)
        guard let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8) else { return nil }
        return text.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) }
        #else
        return nil
        #endif
    }

    /// Binds `fd` to 127.0.0.1:`port` (0: the kernel's choice), answering the port bound.
    private static func bind(_ fd: Int32, port: UInt16) -> Int? {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                #if canImport(Glibc)
                Glibc.bind(fd, socketAddress, length) == 0 && getsockname(fd, socketAddress, &length) == 0
                #else
                Darwin.bind(fd, socketAddress, length) == 0 && getsockname(fd, socketAddress, &length) == 0
                #endif
            }
        }
        return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }

    /// Frees the port for the server that is about to bind it; later calls do nothing.
    package func release() {
        if let fd = descriptor.withLock({ value in defer { value = nil }; return value }) { close(fd) }
    }

    deinit { release() }
}
