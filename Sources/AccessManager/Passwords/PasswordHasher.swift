import CArgon2
import NIOPosix

/// Argon2id password hashing through the system libargon2.
///
/// Parameters follow the OWASP Password Storage Cheat Sheet (m = 19 MiB, t = 2, p = 1); the
/// encoded string (`$argon2id$v=19$m=…,t=…,p=…$salt$hash`) carries them, so stored hashes stay
/// verifiable when the defaults change. Hashing takes tens of milliseconds of CPU, so it runs
/// on NIO's blocking thread pool, which also bounds how many run at once.
package struct PasswordHasher: Sendable {
    package struct Parameters: Sendable {
        package var iterations: UInt32 = 2
        package var memoryKiB: UInt32 = 19 * 1024
        package var parallelism: UInt32 = 1

        package init() {}
    }

    private static let saltLength = 16
    private static let hashLength = 32

    let parameters: Parameters
    /// A hash of a random password, verified against when an email is unknown so that
    /// "no such account" costs the same time as "wrong password".
    private let decoyHash: String

    package init(parameters: Parameters = Parameters()) {
        self.parameters = parameters
        var decoy = [UInt8](repeating: 0, count: 24)
        for index in decoy.indices { decoy[index] = .random(in: .min ... .max) }
        self.decoyHash = (try? Self.encode(password: decoy, parameters: parameters)) ?? ""
    }

    /// The encoded Argon2id hash of the password with a fresh random salt.
    package func hash(_ password: Password) async throws -> String {
        let parameters = self.parameters
        let bytes = Array(password.value.utf8)
        return try await NIOThreadPool.singleton.runIfActive {
            try Self.encode(password: bytes, parameters: parameters)
        }
    }

    /// The encoded Argon2id hash of a share link's PIN (a few digits: the lock after ten wrong
    /// tries, not the hash, is what stops guessing; the hash keeps it out of a stolen database).
    package func hash(pin: SharePIN) async throws -> String {
        let parameters = self.parameters
        let bytes = Array(pin.value.utf8)
        return try await NIOThreadPool.singleton.runIfActive {
            try Self.encode(password: bytes, parameters: parameters)
        }
    }

    /// Whether the password matches the encoded hash (libargon2 compares in constant time).
    package func verify(_ password: String, against encodedHash: String) async -> Bool {
        let bytes = Array(password.utf8)
        guard bytes.count <= Password.maximumBytes else { return false }
        return
            (try? await NIOThreadPool.singleton.runIfActive {
                bytes.withUnsafeBytes { buffer in
                    argon2id_verify(encodedHash, buffer.baseAddress, buffer.count) == ARGON2_OK.rawValue
                }
            }) ?? false
    }

    /// Spends the time of one verification and returns false: used when the account does not exist.
    package func verifyDecoy(_ password: String) async -> Bool {
        _ = await verify(password, against: decoyHash)
        return false
    }

    private static func encode(password: [UInt8], parameters: Parameters) throws -> String {
        var salt = [UInt8](repeating: 0, count: saltLength)
        var generator = SystemRandomNumberGenerator()
        for index in salt.indices { salt[index] = .random(in: .min ... .max, using: &generator) }
        let length = argon2_encodedlen(
            parameters.iterations, parameters.memoryKiB, parameters.parallelism,
            UInt32(saltLength), UInt32(hashLength), Argon2_id
        )
        var encoded = [CChar](repeating: 0, count: length)
        let status = password.withUnsafeBytes { passwordBuffer in
            argon2id_hash_encoded(
                parameters.iterations, parameters.memoryKiB, parameters.parallelism,
                passwordBuffer.baseAddress, passwordBuffer.count, salt, salt.count, hashLength,
                &encoded, length
            )
        }
        guard status == ARGON2_OK.rawValue else { throw PasswordHashingError(code: status) }
        return String(cString: encoded)
    }
}

/// libargon2 refused to hash (out of memory, bad parameters): a server fault, not the caller's.
package struct PasswordHashingError: Error {
    let code: Int32
}
