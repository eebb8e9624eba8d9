import ArgumentParser
import Data4HelpCore
import DatabaseLink
import Foundation
import HTTPAPI
import HealthSharing
import NIOHTTP1
import PostgresNIO

/// `data4help bench aggregates`: latency of aggregate queries over a seeded population.
///
/// Seeds people with `days` days of heart rate and steps each, then, through the HTTP API as a
/// third party, runs every statistic and the groupings over the whole window, `runs` times each
/// with a different ε (so that none is a repeat answered from the store). The population grows
/// through each of `individuals` in turn (by default 10,000, then 90,000 more: 100,000), the
/// queries asked again at each size, so the growth shows.
struct AggregateBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "aggregates", abstract: "Aggregate query latency over a seeded population.")

    @Option(parsing: .upToNextOption, help: "Population sizes measured in turn, each seeded on top of the last.")
    var individuals = [10_000, 100_000]
    @Option(help: "Days of history each.") var days = 365
    @Option(help: "Runs of each query.") var runs = 20

    func run() async throws {
        lineBufferStandardOutput()  // each line as it comes, also into a file or a pipe
        try await BenchServer.run(configure: { configuration in
            configuration.privacyBudget.perDay = Epsilon(hundredths: 10_000)
            configuration.privacyBudget.per30Days = Epsilon(hundredths: 10_000)
        }) { server in
            let sizes = individuals.sorted()
            guard let smallest = sizes.first, smallest > 0 else { throw ValidationError("--individuals: at least one size above 0") }
            print(
                "data4help bench aggregates — \(sizes.map(String.init).joined(separator: ", then ")) individuals × \(days) days, \(runs) runs per query"
            )
            var seeded = 0
            for (round, size) in sizes.enumerated() where size > seeded {
                let (seeding, before) = (ContinuousClock.now, seeded)
                // A client of its own for each step: a client runs once.
                let database = Database(configuration: server.databaseURL.clientConfiguration(maximumConnections: 2), logger: server.logger)
                let bar = ProgressBar(total: size - before, label: "seeding \(before + 1)–\(size)")
                do {
                    try await database.whileRunning {
                        try await PopulationSeeder(database: database).seed(
                            individuals: size - before, days: days, startingAt: before, progress: bar.update)
                        // Vacuumed as autovacuum leaves settled rollups (all-visible): index-only
                        // scans then skip the heap. Without it the first queries' plans fetch every row.
                        try await database.query("VACUUM (ANALYZE)")
                    }
                } catch {
                    throw ValidationError("seeding failed: \(String(reflecting: error))")
                }
                bar.finish()
                let took = (ContinuousClock.now - seeding).inSeconds
                print(String(format: "seeded %d more individuals in %.1f s (%d in all)", size - before, took, size))
                BenchSummary.record("aggregates", "seeding \(size - before) individuals × \(days) days (s)", format: "%.1f", took)
                seeded = size
                try await measure(server, population: size, round: round)
            }
        }
    }

    /// Every query `runs` times over the population seeded so far.
    private func measure(_ server: BenchServer, population: Int, round: Int) async throws {
        let to = CalendarDay(containing: Date())
        let from = CalendarDay(ordinal: to.ordinal - days + 1)
        let last50 = CalendarDay(ordinal: to.ordinal - 49)
        let week = CalendarDay(ordinal: AggregateSpec.weekStart(CalendarDay(ordinal: to.ordinal - 48 * 7)).ordinal)
        // The same 49 weeks ending on the last Sunday (today, on a Sunday): whole weeks only, which
        // the statement reads without any day; the window ending today has a partial last week
        // on the other six days.
        let sunday = CalendarDay(ordinal: AggregateSpec.weekStart(CalendarDay(ordinal: to.ordinal + 1)).ordinal - 1)
        let monday = CalendarDay(ordinal: sunday.ordinal - 49 * 7 + 1)
        // And a window with partial weeks at both ends whatever the day: a Wednesday to a Tuesday.
        let (wednesday, tuesday) = (CalendarDay(ordinal: monday.ordinal + 2), CalendarDay(ordinal: sunday.ordinal - 5))
        let queries: [(String, String)] = [
            ("count, heart rate", #""type":"heartRate","statistic":"count","from":"\#(from.text)","to":"\#(to.text)""#),
            ("mean, heart rate", #""type":"heartRate","statistic":"mean","from":"\#(from.text)","to":"\#(to.text)""#),
            ("sum, steps", #""type":"stepCount","statistic":"sum","from":"\#(from.text)","to":"\#(to.text)""#),
            ("histogram, heart rate", #""type":"heartRate","statistic":"histogram","from":"\#(from.text)","to":"\#(to.text)""#),
            ("quantiles, steps", #""type":"stepCount","statistic":"quantiles","from":"\#(from.text)","to":"\#(to.text)""#),
            (
                "mean by age band, heart rate",
                #""type":"heartRate","statistic":"mean","groupBy":"ageBand","from":"\#(from.text)","to":"\#(to.text)""#
            ),
            (
                "mean by area, heart rate",
                #""type":"heartRate","statistic":"mean","groupBy":"area","areas":\#(PopulationSeeder.areas),"from":"\#(from.text)","to":"\#(to.text)""#
            ),
            ("mean by sex, steps", #""type":"stepCount","statistic":"mean","groupBy":"sex","from":"\#(from.text)","to":"\#(to.text)""#),
            (
                "mean by week (49 weeks), heart rate",
                #""type":"heartRate","statistic":"mean","groupBy":"week","from":"\#(week.text)","to":"\#(to.text)""#
            ),
            (
                "mean by week (49 whole weeks), heart rate",
                #""type":"heartRate","statistic":"mean","groupBy":"week","from":"\#(monday.text)","to":"\#(sunday.text)""#
            ),
            (
                "mean by week (Wed…Tue, 49 weeks), heart rate",
                #""type":"heartRate","statistic":"mean","groupBy":"week","from":"\#(wednesday.text)","to":"\#(tuesday.text)""#
            ),
            (
                "mean by day (50 days), heart rate",
                #""type":"heartRate","statistic":"mean","groupBy":"day","from":"\#(last50.text)","to":"\#(to.text)""#
            ),
        ]
        print("")
        print(
            "query over \(population) (whole window unless said)".padding(toLength: 46, withPad: " ", startingAt: 0)
                + " p50 (ms)   p95 (ms)   groups released")
        for (index, (name, body)) in queries.enumerated() {
            let token = try await server.thirdPartySession(round * queries.count + index)  // a budget of its own
            var latencies: [Double] = []
            var released = 0
            for run in 0..<runs {
                let epsilon = String(format: "%.2f", 1.0 - Double(run) * 0.01)
                let started = ContinuousClock.now
                let (status, answer) = try await server.send(
                    .POST, "/api/thirdparties/aggregates", token: token, json: "{\(body),\"epsilon\":\(epsilon)}")
                latencies.append((ContinuousClock.now - started).inSeconds * 1000)
                guard status == .created else { throw ValidationError("\(name) answered \(status): \(answer)") }
                released = (answer["groups"] as? [Any])?.count ?? 0
            }
            latencies.sort()
            print(
                String(
                    format: "%@ %8.1f   %8.1f   %d", name.padding(toLength: 46, withPad: " ", startingAt: 0),
                    percentile(latencies, 0.5), percentile(latencies, 0.95), released))
            BenchSummary.record(
                "aggregates", "\(name), \(population) people, p50 / p95 (ms)", format: "%.1f / %.1f", percentile(latencies, 0.5),
                percentile(latencies, 0.95))
        }
    }
}
