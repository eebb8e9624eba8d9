import Foundation

/// Exact samplers for differential privacy, on integers only (Canonne, Kamath and Steinke, "The
/// Discrete Gaussian for Differential Privacy", 2020, algorithms 1 and 2).
///
/// The textbook inverse-CDF Laplace sampler (`-b·sign(u)·ln(1-2|u|)` on a floating-point `u`)
/// leaks through the gaps and rounding of floating-point values (Mironov, 2012). These samplers
/// use only uniform integers from a CSPRNG and exact integer comparisons: the output follows the
/// discrete Laplace distribution exactly, P(Z = z) ∝ exp(-|z| / scale), for a rational scale.
package struct DiscreteLaplace: Sendable {
    /// The scale as the fraction `numerator / denominator` (both ≥ 1).
    package let numerator: Int64
    package let denominator: Int64

    package init(numerator: Int64, denominator: Int64) {
        precondition(numerator >= 1 && denominator >= 1, "the scale must be positive")
        self.numerator = numerator
        self.denominator = denominator
    }

    package var scale: Double { Double(numerator) / Double(denominator) }

    /// One draw, from the system CSPRNG unless another generator is given.
    package func sample() -> Int64 {
        var generator = SystemRandomNumberGenerator()
        return sample(using: &generator)
    }

    /// Algorithm 2: X = U + t·V with U uniform on {0…t-1} accepted with probability exp(-U/t) and V
    /// geometric (Bernoulli(exp(-1)) trials), then Y = ⌊X / s⌋ with a random sign, rejecting
    /// "-0"; for scale t / s.
    package func sample<G: RandomNumberGenerator>(using generator: inout G) -> Int64 {
        let t = numerator, s = denominator
        while true {
            let u = Int64.random(in: 0..<t, using: &generator)
            guard Self.bernoulliExp(numerator: u, denominator: t, using: &generator) else { continue }
            var v: Int64 = 0
            while Self.bernoulliExp(numerator: 1, denominator: 1, using: &generator) { v += 1 }
            let x = u + t * v
            let y = x / s
            let negative = Bool.random(using: &generator)
            if negative && y == 0 { continue }
            return negative ? -y : y
        }
    }

    /// Algorithm 1: true with probability exp(-n/d), exactly. For γ = n/d ≤ 1 it draws
    /// Bernoulli(γ/k) for k = 1, 2, … until one fails and answers whether the count is odd;
    /// larger γ is split into ⌊γ⌋ factors of exp(-1) and one of exp(-(γ-⌊γ⌋)).
    package static func bernoulliExp<G: RandomNumberGenerator>(numerator n: Int64, denominator d: Int64, using generator: inout G) -> Bool {
        precondition(n >= 0 && d >= 1)
        if n <= d {
            var k: Int64 = 1
            // Bernoulli(n / (d·k)): a uniform integer below d·k is below n.
            while Int64.random(in: 0..<(d * k), using: &generator) < n { k += 1 }
            return k % 2 == 1
        }
        for _ in 0..<(n / d) where !bernoulliExp(numerator: 1, denominator: 1, using: &generator) { return false }
        return bernoulliExp(numerator: n % d, denominator: d, using: &generator)
    }

    /// exp(-1/scale), the ratio of neighbouring probabilities.
    private var ratio: Double { Foundation.exp(-1 / scale) }

    /// P(Z = z) of this distribution.
    package func probability(of z: Int64) -> Double {
        (1 - ratio) / (1 + ratio) * Foundation.exp(-Double(abs(z)) / scale)
    }

    /// P(Z ≥ m) for m ≥ 1: q^m / (1 + q), q = exp(-1/scale).
    package func upperTail(atLeast m: Int64) -> Double {
        Foundation.exp(-Double(m) / scale) / (1 + ratio)
    }

    /// The smallest m ≥ 1 with P(Z ≥ m) ≤ `probability`: the margin a threshold needs so that a
    /// value at or below it passes with at most that probability.
    package func margin(forFalsePositive probability: Double) -> Int64 {
        var m = max(1, Int64((scale * Foundation.log(1 / (probability * (1 + ratio)))).rounded(.up)) - 1)
        while upperTail(atLeast: m) > probability { m += 1 }
        return m
    }

    /// The smallest half-width w with P(|Z| > w) ≤ 1 - `coverage`.
    package func halfWidth(coverage: Double) -> Int64 {
        var w = max(0, Int64((scale * Foundation.log(2 / ((1 - coverage) * (1 + ratio)))).rounded(.up)) - 2)
        while 2 * upperTail(atLeast: w + 1) > 1 - coverage { w += 1 }
        return w
    }
}
