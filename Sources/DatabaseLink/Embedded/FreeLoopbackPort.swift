#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
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

    package init() throws(EmbeddedPostgresError) {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw .commandFailed("cannot open a socket to find a free port") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(fd, socketAddress, length) == 0 && getsockname(fd, socketAddress, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw .commandFailed("cannot bind a loopback socket to find a free port")
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        descriptor = Mutex(fd)
    }

    /// Frees the port for the server that is about to bind it; later calls do nothing.
    package func release() {
        if let fd = descriptor.withLock({ value in defer { value = nil }; return value }) { close(fd) }
    }

    deinit { release() }
}
