import AccessManager
import Testing

@Suite("Passwords and bearer secrets")
struct CredentialTests {
    @Test func argon2idHashVerifiesOnlyTheRightPassword() async throws {
        let hasher = PasswordHasher()
        let hash = try await hasher.hash(Password(parsing: "correct horse battery"))
        #expect(hash.hasPrefix("$argon2id$v=19$m=19456,t=2,p=1$"))
        #expect(await hasher.verify("correct horse battery", against: hash))
        #expect(await !hasher.verify("correct horse batterY", against: hash))
        #expect(await !hasher.verify("anything", against: "not a hash"))
    }

    @Test func samePasswordGetsDifferentSalts() async throws {
        let hasher = PasswordHasher()
        let password = try Password(parsing: "correct horse battery")
        let first = try await hasher.hash(password)
        let second = try await hasher.hash(password)
        #expect(first != second)
    }

    @Test func tokensCarry256RandomBits() {
        let token = BearerSecret.newAccessToken()
        #expect(token.hasPrefix("d4ht_"))
        #expect(token.count == 5 + 43)  // 32 bytes in unpadded base64url
        #expect(BearerSecret.newAccessToken() != token)
        #expect(BearerSecret.digest(token).count == 32)
    }

    @Test func apiKeysShowOnlyTheirPrefix() {
        let (key, prefix) = BearerSecret.newAPIKey()
        #expect(key.hasPrefix(prefix + "_"))
        #expect(prefix.count == 5 + 8)
        #expect(key.count == prefix.count + 1 + 43)
    }
}
