import Data4HelpCore
import DatabaseLink
import Foundation

/// Turns exact, bounded group aggregates into a differentially private answer.
///
/// ε is divided first among the groups one individual can appear in (time groups: all of them;
/// area, age band and sex groups are disjoint, so each gets all of ε), then within a group between
/// the count — which also decides whether the group is released — and the statistic. Every noisy
/// figure is exact discrete-Laplace noise on an integer (counts, or sums in fixed-point units).
/// A group is released only if its noisy count reaches `minimumGroup` + a margin at which a group
/// of `minimumGroup` or fewer passes with probability at most `falsePositive`.
package struct AggregateMechanism: Sendable {
    package var minimumGroup: Int64 = 1000
    package var falsePositive = 1e-6
    package var coverage = 0.95
    package static let quantiles = [0.1, 0.25, 0.5, 0.75, 0.9]

    package init(minimumGroup: Int64 = 1000) {
        self.minimumGroup = minimumGroup
    }

    /// The per-group shares, as noise distributions for a sensitivity of 1 and of `sensitivity`.
    struct Shares {
        let count: DiscreteLaplace
        let statistic: DiscreteLaplace?
    }

    func shares(_ spec: AggregateSpec, domain: AggregateDomain) -> Shares {
        let groupsPerIndividual = Int64(spec.groupBy.map { $0.isTime ? spec.groupCount($0) : 1 } ?? 1)
        let h = Int64(spec.epsilon.hundredths)
        // scale = Δ / ε' with ε' = (h / 100) / (groupsPerIndividual · split)
        func noise(sensitivity: Int64, split: Int64) -> DiscreteLaplace {
            DiscreteLaplace(numerator: sensitivity * 100 * groupsPerIndividual * split, denominator: h)
        }
        switch spec.statistic {
        case .count:
            return Shares(count: noise(sensitivity: 1, split: 1), statistic: nil)
        case .mean:
            return Shares(count: noise(sensitivity: 1, split: 2), statistic: noise(sensitivity: domain.centredSensitivity, split: 2))
        case .sum:
            return Shares(count: noise(sensitivity: 1, split: 2), statistic: noise(sensitivity: domain.sumSensitivity, split: 2))
        case .histogram, .quantiles:
            // Each individual is in exactly one bin: the bins share their half of ε in parallel.
            return Shares(count: noise(sensitivity: 1, split: 2), statistic: noise(sensitivity: 1, split: 2))
        }
    }

    /// The noisy count a group needs to be released.
    package func releaseThreshold(_ spec: AggregateSpec) -> Int64 {
        guard let domain = AggregateDomain(spec.type) else { return .max }
        return minimumGroup + shares(spec, domain: domain).count.margin(forFalsePositive: falsePositive)
    }

    package func release(_ groups: [ExactGroup], spec: AggregateSpec) -> AggregateAnswer {
        releasing(groups, spec: spec).answer
    }

    /// The answer, and the exact groups it released (by their keys): who it included.
    package func releasing(_ groups: [ExactGroup], spec: AggregateSpec) -> (answer: AggregateAnswer, releasedKeys: Set<String>) {
        guard let domain = AggregateDomain(spec.type) else {
            return (AggregateAnswer(status: .refused, reason: AggregateAnswer.groupTooSmall, groups: []), [])
        }
        let shares = shares(spec, domain: domain)
        let threshold = minimumGroup + shares.count.margin(forFalsePositive: falsePositive)
        let countWidth = shares.count.halfWidth(coverage: coverage)
        var released: [AggregateAnswer.Group] = []
        var releasedKeys: Set<String> = []
        for group in groups {
            let count = group.individuals + shares.count.sample()
            guard count >= threshold else { continue }  // suppressed, whatever its size
            var answer = AggregateAnswer.Group(
                key: key(group.key, spec: spec), count: count, countInterval: [max(0, count - countWidth), count + countWidth]
            )
            switch spec.statistic {
            case .count:
                answer.value = Double(count)
                answer.interval = answer.countInterval.map(Double.init)
            case .mean:
                let noise = shares.statistic!
                // The count and the sum each hold with (1 + coverage) / 2, so both together with `coverage`.
                let sumWidth = Double(noise.halfWidth(coverage: (1 + coverage) / 2))
                let wideCount = Double(shares.count.halfWidth(coverage: (1 + coverage) / 2))
                let centred = Double(group.centredSum + noise.sample())
                let n = Double(count)
                let mean = clamp(domain.midpoint + centred / (domain.resolution * n), domain)
                let bounds = [
                    (centred - sumWidth, n + wideCount), (centred - sumWidth, max(1, n - wideCount)),
                    (centred + sumWidth, n + wideCount), (centred + sumWidth, max(1, n - wideCount)),
                ]
                .map { clamp(domain.midpoint + $0.0 / (domain.resolution * $0.1), domain) }
                answer.value = rounded(mean)
                answer.interval = [rounded(bounds.min()!), rounded(bounds.max()!)]
            case .sum:
                let noise = shares.statistic!
                let width = Double(noise.halfWidth(coverage: coverage)) / domain.resolution
                let sum = max(0, Double(group.sum + noise.sample()) / domain.resolution)
                answer.value = rounded(sum)
                answer.interval = [rounded(max(0, sum - width)), rounded(sum + width)]
            case .histogram, .quantiles:
                let noise = shares.statistic!
                let width = noise.halfWidth(coverage: coverage)
                let bins = group.bins.map { max(0, $0 + noise.sample()) }  // clamping is post-processing
                if spec.statistic == .histogram {
                    answer.histogram = zip(domain.bins, bins).map { edges, count in
                        AggregateAnswer.Bin(from: edges.from, to: edges.to, count: count, interval: [max(0, count - width), count + width])
                    }
                } else {
                    answer.quantiles = quantiles(of: bins, domain: domain, noise: noise)
                }
            }
            released.append(answer)
            releasedKeys.insert(group.key)
        }
        if released.isEmpty { return (AggregateAnswer(status: .refused, reason: AggregateAnswer.groupTooSmall, groups: []), []) }
        return (AggregateAnswer(status: .answered, reason: nil, groups: released), releasedKeys)
    }

    /// Quantiles read from the noisy histogram (linear within a bin); the intervals come from
    /// re-noising that histogram 200 times — post-processing of released figures, no extra cost.
    func quantiles(of bins: [Int64], domain: AggregateDomain, noise: DiscreteLaplace) -> [AggregateAnswer.Quantile] {
        let point = Self.quantiles.map { Self.quantile($0, bins: bins, domain: domain) }
        var draws = Array(repeating: [Double](), count: Self.quantiles.count)
        for _ in 0..<200 {
            let resampled = bins.map { max(0, $0 + noise.sample()) }
            for (index, p) in Self.quantiles.enumerated() { draws[index].append(Self.quantile(p, bins: resampled, domain: domain)) }
        }
        return Self.quantiles.enumerated().map { index, p in
            let sorted = draws[index].sorted()
            let low = sorted[Int(Double(sorted.count - 1) * (1 - coverage) / 2)]
            let high = sorted[Int(Double(sorted.count - 1) * (1 + coverage) / 2)]
            return AggregateAnswer.Quantile(p: p, value: rounded(point[index]), interval: [rounded(low), rounded(high)])
        }
    }

    static func quantile(_ p: Double, bins: [Int64], domain: AggregateDomain) -> Double {
        let total = Double(bins.reduce(0, +))
        guard total > 0 else { return domain.midpoint }
        let target = p * total
        var seen = 0.0
        for (index, count) in bins.enumerated() {
            let edges = domain.bins[index]
            if count > 0, seen + Double(count) >= target {
                return edges.from + (edges.to - edges.from) * (target - seen) / Double(count)
            }
            seen += Double(count)
        }
        return domain.upper
    }

    private func key(_ raw: String, spec: AggregateSpec) -> [String: String]? {
        guard let dimension = spec.groupBy else { return nil }
        switch dimension {
        case .ageBand: return [dimension.rawValue: Int(raw).map { AgeBand(lower: $0).label } ?? raw]
        default: return [dimension.rawValue: raw]
        }
    }

    private func clamp(_ value: Double, _ domain: AggregateDomain) -> Double { min(domain.upper, max(domain.lower, value)) }
    private func rounded(_ value: Double) -> Double { (value * 100).rounded() / 100 }
}
