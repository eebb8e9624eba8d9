import Foundation

/// Bytes on a plain TCP connection, for requests no HTTP client library will send (an unknown
/// method, a broken request line): writes `request`, then reads until the server closes the
/// connection or `timeout` passes; answers everything read.
enum RawHTTP {
    struct Failed: Error, CustomStringConvertible {
        let description: String
    }

    static func exchange(port: Int, _ request: String, timeout: TimeInterval = 10) async throws -> String {
        try await Task.detached {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw Failed(description: "socket: \(errno)") }
            defer { close(fd) }
            var wait = timeval(tv_sec: Int(timeout), tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            guard connected else { throw Failed(description: "connect: \(errno)") }
            let bytes = Array(request.utf8)
            guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == bytes.count else { throw Failed(description: "send: \(errno)") }
            var answer: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count <= 0 { break }
                answer += buffer[0..<count]
            }
            return String(decoding: answer, as: UTF8.self)
        }.value
    }
}
