import AccessManager
import Data4HelpCore
import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

/// Per-credential request limits: a token bucket per login token and per API key, holding
/// `limit` requests and refilled at `limit` per `window` — bursts up to the limit, and the
/// limit per window sustained.
///
/// In this instance's memory: a balancer spreading one key's requests over N instances allows
/// up to N × the limit (set the per-instance limit accordingly — the deploy README says so). The
/// brute-force limit on sign-in, which must hold across instances, is kept in PostgreSQL
/// instead (`LoginThrottle`).
package final class RateLimiter: Sendable {
    package struct Decision: Sendable, Equatable {
        package let allowed: Bool
        package let limit: Int
        package let remaining: Int
        /// Seconds until the bucket is full again (`RateLimit-Reset`).
        package let resetSeconds: Int
        /// Seconds until one request is allowed again (`Retry-After`); 0 when allowed.
        package let retryAfterSeconds: Int
    }

    private struct Bucket {
        var tokens: Double
        var updatedAt: ContinuousClock.Instant
    }

    package let limit: Int
    package let window: Duration
    private let buckets = Mutex<[Principal.Credential: Bucket]>([:])
    private let sweepEvery = 10_000
    private let decisions = Atomic<Int>(0)

    package init(limit: Int, window: Duration) {
        self.limit = limit
        self.window = window
    }

    private var perSecond: Double { Double(limit) / window.inSeconds }

    /// Takes one request from the credential's bucket, if it holds one.
    package func take(_ credential: Principal.Credential, now: ContinuousClock.Instant = .now) -> Decision {
        let rate = perSecond, capacity = Double(limit)
        if decisions.add(1, ordering: .relaxed).newValue % sweepEvery == 0 { sweep(now: now) }
        return buckets.withLock { buckets in
            var bucket = buckets[credential] ?? Bucket(tokens: capacity, updatedAt: now)
            bucket.tokens = min(capacity, bucket.tokens + bucket.updatedAt.duration(to: now).inSeconds * rate)
            bucket.updatedAt = now
            let allowed = bucket.tokens >= 1
            if allowed { bucket.tokens -= 1 }
            buckets[credential] = bucket
            return Decision(
                allowed: allowed, limit: limit, remaining: Int(bucket.tokens.rounded(.down)),
                resetSeconds: Int(((capacity - bucket.tokens) / rate).rounded(.up)),
                retryAfterSeconds: allowed ? 0 : max(1, Int(((1 - bucket.tokens) / rate).rounded(.up)))
            )
        }
    }

    /// Buckets held now (one per credential seen since the last sweep), for `/metrics`.
    package var bucketCount: Int { buckets.withLock { $0.count } }

    /// Forgets buckets that have refilled completely: they are the same as no bucket.
    private func sweep(now: ContinuousClock.Instant) {
        let rate = perSecond, capacity = Double(limit)
        buckets.withLock { buckets in
            buckets = buckets.filter { $0.value.tokens + $0.value.updatedAt.duration(to: now).inSeconds * rate < capacity }
        }
    }
}

/// Applies the `RateLimiter` to authenticated requests, with the standard headers on every
/// answer (`RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`, `RateLimit-Policy`) and
/// 429 with `Retry-After` once the bucket is empty.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    let limiter: RateLimiter

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let credential = context.principal?.credential else { return try await next(request, context) }
        let decision = limiter.take(credential)
        let headers = rateLimitHeaders(decision)
        guard decision.allowed else {
            var fields = headers
            fields[.retryAfter] = String(decision.retryAfterSeconds)
            throw Problem(
                .tooManyRequests, slug: "rate-limited", title: "Too many requests",
                detail:
                    "This credential may make \(limiter.limit) requests per \(Int(limiter.window.inSeconds)) seconds; retry after \(decision.retryAfterSeconds) seconds.",
                headers: fields
            )
        }
        var response = try await next(request, context)
        for field in headers { response.headers[field.name] = field.value }
        return response
    }

    private func rateLimitHeaders(_ decision: RateLimiter.Decision) -> HTTPFields {
        [
            .rateLimitLimit: String(decision.limit),
            .rateLimitRemaining: String(decision.remaining),
            .rateLimitReset: String(decision.resetSeconds),
            .rateLimitPolicy: "\(decision.limit);w=\(Int(limiter.window.inSeconds))",
        ]
    }
}

extension HTTPField.Name {
    static let rateLimitLimit = Self("RateLimit-Limit")!
    static let rateLimitRemaining = Self("RateLimit-Remaining")!
    static let rateLimitReset = Self("RateLimit-Reset")!
    static let rateLimitPolicy = Self("RateLimit-Policy")!
}
