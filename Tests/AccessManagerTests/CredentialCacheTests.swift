import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation
import Testing

@Suite("The credential cache: used only while revocations can be heard")
struct CredentialCacheTests {
    static let digest = [UInt8](repeating: 0xAB, count: 32)
    static let principal = Principal(account: .individual(7), credential: .accessToken(id: 42))

    @Test func nothingIsKeptOrFoundUntilTheListenerIsConnected() {
        let cache = CredentialCache()
        cache.store(Self.digest, principal: Self.principal, expiresAt: nil, lastUseWritten: nil)
        #expect(cache.entry(Self.digest) == nil && cache.count == 0)
        cache.listening()
        cache.store(Self.digest, principal: Self.principal, expiresAt: nil, lastUseWritten: nil)
        #expect(cache.entry(Self.digest)?.principal == Self.principal)
        // The connection is lost: everything is forgotten and nothing is served from memory.
        cache.deaf()
        #expect(cache.entry(Self.digest) == nil && cache.count == 0)
        cache.store(Self.digest, principal: Self.principal, expiresAt: nil, lastUseWritten: nil)
        #expect(cache.count == 0)
    }

    @Test func anAnnouncementOrAnEndForgetsTheCredential() {
        let cache = CredentialCache()
        cache.listening()
        cache.store(Self.digest, principal: Self.principal, expiresAt: nil, lastUseWritten: nil)
        cache.forget(hex: String(repeating: "ab", count: 32))
        #expect(cache.entry(Self.digest) == nil)
        // Its own expiry ends an entry.
        cache.store(Self.digest, principal: Self.principal, expiresAt: Date().addingTimeInterval(-1), lastUseWritten: nil)
        #expect(cache.entry(Self.digest) == nil)
        // So does the cache's lifetime.
        let brief = CredentialCache(lifetime: .zero)
        brief.listening()
        brief.store(Self.digest, principal: Self.principal, expiresAt: nil, lastUseWritten: nil)
        #expect(brief.entry(Self.digest) == nil)
        // What this process revokes: by credential and by account.
        cache.store(Self.digest, principal: Self.principal, expiresAt: nil, lastUseWritten: nil)
        cache.forget(.accessToken(id: 41))
        #expect(cache.entry(Self.digest) != nil)
        cache.forget(.account(.individual(7)))
        #expect(cache.entry(Self.digest) == nil)
        // An unreadable announcement forgets everything rather than guess.
        cache.store(Self.digest, principal: Self.principal, expiresAt: nil, lastUseWritten: nil)
        cache.forget(hex: "not hex")
        #expect(cache.count == 0)
    }

    /// Credentials resolved together must not expire together: each gets its own share of the
    /// lifetime, the same every time, and a thousand of them cover the range from half to all.
    @Test func credentialsResolvedTogetherExpireApart() {
        let digests = (0..<1_000).map { Array(BearerSecret.digest("d4h_at_token-\($0)")) }
        let periods = digests.map { CredentialSpread.period(.seconds(60), of: $0) }
        #expect(periods.allSatisfy { $0 >= .seconds(30) && $0 <= .seconds(60) })
        #expect(periods.min()! < .seconds(31) && periods.max()! > .seconds(59))
        #expect(Set(periods).count > 900)
        #expect(digests.prefix(10).map { CredentialSpread.period(.seconds(60), of: $0) } == Array(periods.prefix(10)))
        // In the cache: an entry whose share has passed is gone, one whose share has not is there.
        let cache = CredentialCache(lifetime: .seconds(2))
        cache.listening()
        let (short, long) = (digests[periods.firstIndex(of: periods.min()!)!], digests[periods.firstIndex(of: periods.max()!)!])
        cache.store(short, principal: Self.principal, expiresAt: nil, lastUseWritten: nil)
        cache.store(long, principal: Self.principal, expiresAt: nil, lastUseWritten: nil)
        Thread.sleep(forTimeInterval: 1.5)
        #expect(cache.entry(short) == nil)
        #expect(cache.entry(long) != nil)
    }
}
