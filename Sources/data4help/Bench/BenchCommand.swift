import ArgumentParser

/// `data4help bench …`: benchmarks that print figures (never timed assertions in tests).
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Run a benchmark against a throwaway server and database, and print its figures.",
        subcommands: [
            AllBenchCommand.self, IngestBenchCommand.self, WebhookBenchCommand.self, AggregateBenchCommand.self, SOSBenchCommand.self,
            LiveBenchCommand.self, ImportBenchCommand.self, RulesBenchCommand.self, InsightBenchCommand.self, ReadBenchCommand.self,
            StorageBenchCommand.self,
        ]
    )
}

/// Sorted-sample percentiles, for latency figures.
func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    let index = min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1)
    return sorted[max(0, index)]
}
