/// The 64-bit key that decides whether two uploads are the same sample.
///
/// With a client id, the key is the id's hash; without one, the hash of start time and value,
/// so a phone re-sending a batch after a timeout stores nothing twice. FNV-1a: fast, and the
/// keys are stored, so this function must never change. Collisions matter only within one
/// individual's minute of one type, where 64 bits make them negligible.
package enum DedupeKey {
    package static func forClientId(_ id: String) -> Int64 {
        hash("id:", Array(id.utf8))
    }

    package static func forSample(startMilliseconds: Int64, value: Float) -> Int64 {
        hash("sv:", bytes(of: startMilliseconds) + bytes(of: Int64(value.bitPattern)))
    }

    package static func forFix(timeMilliseconds: Int64, latitude: Double, longitude: Double) -> Int64 {
        hash(
            "ll:",
            bytes(of: timeMilliseconds) + bytes(of: Int64(bitPattern: latitude.bitPattern)) + bytes(of: Int64(bitPattern: longitude.bitPattern)))
    }

    private static func bytes(of value: Int64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
    }

    private static func hash(_ domain: String, _ bytes: [UInt8]) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in Array(domain.utf8) + bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }
}
