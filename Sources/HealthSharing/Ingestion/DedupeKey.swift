/// The 64-bit key that decides whether two uploads are the same sample.
///
/// With a client id, the key is the id's hash; without one, the hash of start time and value,
/// so a phone re-sending a batch after a timeout stores nothing twice. FNV-1a: fast, and the
/// keys are stored, so this function must never change. Collisions matter only within one
/// individual's minute of one type, where 64 bits make them negligible.
package enum DedupeKey {
    package static func forClientId(_ id: String) -> Int64 {
        var hash = FNV1a(domain: "id:")
        // Over the string's own bytes: its UTF-8 iterator was most of this function's cost (5 %
        // of decoding an upload with ids).
        var id = id
        id.withUTF8 { for byte in $0 { hash.add(byte) } }
        return hash.value
    }

    package static func forSample(startMilliseconds: Int64, value: Float) -> Int64 {
        var hash = FNV1a(domain: "sv:")
        hash.add(startMilliseconds)
        hash.add(Int64(value.bitPattern))
        return hash.value
    }

    package static func forFix(timeMilliseconds: Int64, latitude: Double, longitude: Double) -> Int64 {
        var hash = FNV1a(domain: "ll:")
        hash.add(timeMilliseconds)
        hash.add(Int64(bitPattern: latitude.bitPattern))
        hash.add(Int64(bitPattern: longitude.bitPattern))
        return hash.value
    }

    /// FNV-1a over the domain's bytes, then the bytes added (integers little-endian), without
    /// building an array of them: an import computes one key per record.
    private struct FNV1a {
        private var state: UInt64 = 0xcbf2_9ce4_8422_2325

        init(domain: StaticString) {
            domain.withUTF8Buffer { for byte in $0 { add(byte) } }
        }

        mutating func add(_ byte: UInt8) {
            state ^= UInt64(byte)
            state &*= 0x0000_0100_0000_01b3
        }

        mutating func add(_ value: Int64) {
            for shift in stride(from: 0, to: 64, by: 8) { add(UInt8(truncatingIfNeeded: value >> shift)) }
        }

        var value: Int64 { Int64(bitPattern: state) }
    }
}
