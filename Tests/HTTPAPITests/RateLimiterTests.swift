import AccessManager
import HTTPAPI
import Testing

/// The token bucket behind every per-credential and per-address limit, on a clock of its own.
@Suite("RateLimiter: a token bucket per key")
struct RateLimiterTests {
    @Test func aFullBucketAnswersItsLimitThenRefillsAtItsRate() {
        let limiter = RateLimiter(limit: 3, window: .seconds(60))
        let start = ContinuousClock.now
        let key = Principal.Credential.visitor(address: "192.0.2.1")
        #expect((0..<3).allSatisfy { _ in limiter.take(key, now: start).allowed })
        let refused = limiter.take(key, now: start)
        #expect(!refused.allowed && refused.retryAfterSeconds == 20)
        // Another address has a bucket of its own.
        #expect(limiter.take(.visitor(address: "192.0.2.2"), now: start).allowed)
        #expect(!limiter.take(key, now: start + .seconds(19)).allowed)
        #expect(limiter.take(key, now: start + .seconds(20)).allowed)
        #expect(!limiter.take(key, now: start + .seconds(20)).allowed)
    }
}
