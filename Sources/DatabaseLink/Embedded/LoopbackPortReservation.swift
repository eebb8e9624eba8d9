import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP port on 127.0.0.1 that is this holder's until it is dropped.
///
/// Two things keep the port: a socket bound to it and not listening, which `release()` closes
/// right before the real server (this process's or a child's) binds the port — while it is open,
/// connections are refused, the server is "down", and no `bind` can take the port — and an
/// exclusive `flock` on a per-port file in a directory shared by every process of the machine,
/// held until the reservation is dropped. The lock covers the window between `release()` and
/// the server's `bind`: on a busy machine running two test suites, another suite's reservation
/// chose the same released port in that window and the simulated dispatch centre could not
/// start ("Address already in use"). So keep a reservation until its server listens (or for the
/// server's life); a reservation skips ports another one holds, locked or bound.
package final class LoopbackPortReservation: Sendable {
    package let port: Int
    private let descriptor: Mutex<Int32?>
    /// The `flock`ed port file; closed (unlocking it) only when the reservation is dropped.
    private let lock: Int32?

    /// Binds a port below the kernel's ephemeral range, chosen at random, falling back to one
    /// the kernel chooses. The kernel hands out ephemeral ports to every `bind(port: 0)` and to
    /// every outgoing connection's local end, so a port from that range that is released for a
    /// child process to bind can be taken in between by any connection of a busy machine; below
    /// the range only another explicit choice like this one can take it, and the lock stops those.
    package convenience init() throws(EmbeddedPostgresError) {
        var candidates: [UInt16] = []
        if let ephemeral = Self.ephemeralRangeStart(), (2_049...65_535).contains(ephemeral) {
            let range = UInt16(max(1_024, ephemeral - 12_000))...UInt16(ephemeral - 1)
            candidates = (0..<64).map { _ in UInt16.random(in: range) }
        }
        try self.init(trying: candidates)
    }

    /// Binds the first of `candidates` that no other reservation holds and nothing has bound,
    /// else a port the kernel chooses.
    package init(trying candidates: [UInt16]) throws(EmbeddedPostgresError) {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw .commandFailed("cannot open a socket to find a free port") }
        var chosen: (port: Int, lock: Int32?)?
        for candidate in candidates where chosen == nil {
            let lock: Int32?
            switch Self.lockFile(port: candidate) {
            case .taken: continue
            case .held(let descriptor): lock = descriptor
            case .unavailable: lock = nil
            }
            if let port = Self.bind(fd, port: candidate) {
                chosen = (port, lock)
            } else if let lock {
                close(lock)
            }
        }
        if chosen == nil, let port = Self.bind(fd, port: 0) {
            if case .held(let lock) = Self.lockFile(port: UInt16(port)) { chosen = (port, lock) } else { chosen = (port, nil) }
        }
        guard let chosen else {
            close(fd)
            throw .commandFailed("cannot bind a loopback socket to find a free port")
        }
        port = chosen.port
        lock = chosen.lock
        descriptor = Mutex(fd)
    }

    private enum PortLock {
        /// The open, locked descriptor.
        case held(Int32)
        /// Another reservation (of any process) holds the port.
        case taken
        /// The lock directory cannot be used: the socket alone keeps the port.
        case unavailable
    }

    /// Takes the exclusive lock on `port`'s file without waiting.
    private static func lockFile(port: UInt16) -> PortLock {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("data4help-loopback-ports")
        if !FileManager.default.fileExists(atPath: directory.path) {
            try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o1777])
        }
        let fd = open(directory.appendingPathComponent("\(port)").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o666)
        guard fd >= 0 else { return .unavailable }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            return .taken
        }
        return .held(fd)
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

    /// A reservation whose socket is already closed, for a server (this process's or a child's)
    /// that binds the port at once: keep it until the server listens.
    package static func forImmediateBind() throws(EmbeddedPostgresError) -> LoopbackPortReservation {
        let reservation = try LoopbackPortReservation()
        reservation.release()
        return reservation
    }

    /// Closes the socket so that the server about to bind the port can; the port stays locked
    /// against other reservations until this one is dropped. Later calls do nothing.
    package func release() {
        if let fd = descriptor.withLock({ value in
            defer { value = nil }; return value
        }) {
            close(fd)
        }
    }

    deinit {
        release()
        if let lock { close(lock) }
    }
}
