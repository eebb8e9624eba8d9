import AccessManager
import Data4HelpCore
import DatabaseLink
import DatabaseTestSupport
import Foundation
import HealthSharing
import PostgresNIO
import Testing

/// The exact per-group aggregates (before any noise) against a reference computed here from the
/// daily rows themselves, for every grouping: the statement reads months, weeks, partial weeks and
/// days through different rollups, and each must add up to what the days say.
@Suite struct GroupAggregateReferenceTests {
    struct DayRow {
        let person: Int64, type: Int16, day: CalendarDay, count: Int64, sum: Double, area: String, sex: String
    }

    @Test func everyGroupingAddsUpToTheDays() async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 2), logger: TestPostgres.logger)
        try await database.whileRunning {
            try await PopulationSeeder(database: database).seed(individuals: 60, days: 130, tag: "ref")
            // Gaps, uneven counts and opted-out people, so that no rollup is uniform.
            try await database.query("DELETE FROM daily_rollups WHERE (individual_id + (day - date '2000-01-01')) % 7 = 0")
            try await database.query(
                "UPDATE daily_rollups SET sample_count = 1 + individual_id % 11, value_sum = value_sum / 3 WHERE (individual_id + (day - date '2000-01-01')) % 5 = 1"
            )
            try await database.query("UPDATE individuals SET aggregates_opt_out = true WHERE id % 9 = 0")
            let rows = try await database.query(
                """
                SELECT r.individual_id, r.sample_type, r.day::text, r.sample_count::int8, r.value_sum, i.home_area, i.sex
                FROM daily_rollups r JOIN individuals i ON i.id = r.individual_id WHERE NOT i.aggregates_opt_out AND r.sample_count > 0
                """
            ).map { row in
                let (person, type, day, count, sum, area, sex) = try row.decode((Int64, Int16, String, Int64, Double, String, String).self)
                return DayRow(person: person, type: type, day: try CalendarDay(parsing: day), count: count, sum: sum, area: area, sex: sex)
            }
            let service = AggregateService(database: database, budget: PrivacyBudget(), mechanism: AggregateMechanism(minimumGroup: 20))
            let today = CalendarDay(containing: Date())
            // A Wednesday to a Thursday: partial weeks at both ends, and several months.
            let wednesday = CalendarDay(ordinal: AggregateSpec.weekStart(CalendarDay(ordinal: today.ordinal - 120)).ordinal + 2)
            let thursday = CalendarDay(ordinal: AggregateSpec.weekStart(CalendarDay(ordinal: today.ordinal - 4)).ordinal - 4)
            // A Monday to a Sunday: whole weeks only (the statement reads no days for them).
            let monday = CalendarDay(ordinal: wednesday.ordinal - 2)
            let sunday = CalendarDay(ordinal: thursday.ordinal + 3)
            // Each grouping over the whole population and over women only (the statement reads the
            // first without joining the people), and every statistic: each reads its own figure.
            let windows: [(AggregateDimension?, CalendarDay, CalendarDay, Sex?)] = [
                (.day, CalendarDay(ordinal: today.ordinal - 55), CalendarDay(ordinal: today.ordinal - 8), nil),
                (.day, CalendarDay(ordinal: today.ordinal - 55), CalendarDay(ordinal: today.ordinal - 8), .female),
                (.week, wednesday, thursday, nil), (.week, wednesday, thursday, .female),
                (.week, CalendarDay(ordinal: wednesday.ordinal + 1), CalendarDay(ordinal: wednesday.ordinal + 3), nil),
                (.week, monday, sunday, nil), (.week, monday, sunday, .female),
                // The ends of two weeks and no whole week between them: a Friday to a Tuesday.
                (.week, CalendarDay(ordinal: wednesday.ordinal + 2), CalendarDay(ordinal: wednesday.ordinal + 6), nil),
                (nil, wednesday, thursday, nil), (nil, wednesday, thursday, .female), (.area, wednesday, thursday, nil),
                (.sex, wednesday, thursday, nil),
            ]
            for type in [SampleType.heartRate, .stepCount] {
                for (groupBy, from, to, sex) in windows {
                    for statistic in AggregateStatistic.allCases {
                        let spec = try AggregateSpec(
                            type: .sample(type), statistic: statistic,
                            areas: groupBy == .area ? try PopulationSeeder.areas.map { try AreaCode(parsing: $0) } : [], ageBands: [], sex: sex,
                            from: from, to: to, groupBy: groupBy,
                            epsilon: Epsilon(hundredths: 100))
                        let query = service.groupQuery(spec)
                        if groupBy == .week, from == monday {
                            #expect(query.weekEdges.isEmpty && query.weeks.count > 10, "whole weeks only: no days read")
                        }
                        let exact = try await GroupAggregateStore(database: database).exactGroups(query)
                        let chosen = rows.filter { $0.type == type.storageCode && (sex == nil || $0.sex == sex?.rawValue) }
                        let expected = Self.reference(chosen, query, from: from, to: to)
                        let context =
                            "\(type) \(statistic) by \(groupBy.map { "\($0)" } ?? "nothing") of \(sex?.rawValue ?? "all") \(from.text)…\(to.text)"
                        #expect(exact.map(\.key) == expected.map(\.key), "\(context)")
                        #expect(expected.count > 0, "\(context)")
                        for (got, want) in zip(exact, expected) {
                            #expect(got.individuals == want.individuals, "\(context) \(got.key)")
                            #expect(Set(got.members) == Set(want.members) && got.members.count == want.members.count, "\(context) \(got.key)")
                            // The figure the statistic reads, as the days say; the others not computed.
                            let reads = query.reads
                            #expect(got.bins == (reads == .bins ? want.bins : []), "\(context) \(got.key)")
                            // Sums of doubles in another order: each person's rounding may differ by one unit.
                            #expect(abs(got.sum - (reads == .sum ? want.sum : 0)) <= (reads == .sum ? want.individuals : 0), "\(context) \(got.key)")
                            #expect(
                                abs(got.centredSum - (reads == .centredSum ? want.centredSum : 0)) <= (reads == .centredSum ? want.individuals : 0),
                                "\(context) \(got.key)")
                        }
                        #expect(
                            query.reads
                                == [.count: .individuals, .mean: .centredSum, .sum: .sum, .histogram: .bins, .quantiles: .bins][statistic],
                            "\(context)")
                    }
                }
            }
        }
    }

    /// What the statement should answer, from the days: per person and group their days, count
    /// and sum over the window, one clamped value each, then counts, sums and bins per group.
    static func reference(_ rows: [DayRow], _ query: GroupQuery, from: CalendarDay, to: CalendarDay) -> [ExactGroup] {
        struct Key: Hashable { let person: Int64, group: String }
        var totals: [Key: (days: Int64, count: Int64, sum: Double)] = [:]
        for row in rows where row.day >= from && row.day <= to {
            let group: String =
                switch query.key {
                case .day: row.day.text
                case .week: AggregateSpec.weekStart(row.day).text
                case .area: row.area
                case .sex: row.sex
                case .none, .ageBand: ""
                }
            let key = Key(person: row.person, group: group)
            let total = totals[key] ?? (0, 0, 0)
            totals[key] = (total.days + 1, total.count + row.count, total.sum + row.sum)
        }
        let midpoint = (query.lower + query.upper) / 2
        var groups: [String: ExactGroup] = [:]
        for (key, total) in totals {
            let value = min(max(query.dailyTotal ? total.sum / Double(total.days) : total.sum / Double(total.count), query.lower), query.upper)
            let bin = min(Int(((value - query.lower) / query.binWidth).rounded(.down)), Int(query.binCount) - 1)
            var group =
                groups[key.group]
                ?? ExactGroup(key: key.group, individuals: 0, centredSum: 0, sum: 0, bins: Array(repeating: 0, count: Int(query.binCount)))
            group.individuals += 1
            group.sum += Int64((value * query.resolution).rounded())
            group.centredSum += Int64(((value - midpoint) * query.resolution).rounded())
            group.bins[bin] += 1
            group.members.append(key.person)
            groups[key.group] = group
        }
        return groups.values.sorted { $0.key < $1.key }
    }
}
