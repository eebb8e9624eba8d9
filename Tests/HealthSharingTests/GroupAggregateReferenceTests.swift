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

    /// A new database with `individuals` seeded people of `days` days each, one day in every
    /// `gap` of each person's taken away.
    static func withSeeded(
        individuals: Int, days: Int, tag: String, gap: Int, connections: Int = 2, _ body: @Sendable (Database) async throws -> Void
    ) async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: connections), logger: TestPostgres.logger)
        try await database.whileRunning {
            try await PopulationSeeder(database: database).seed(individuals: individuals, days: days, tag: tag)
            try await database.query("DELETE FROM daily_rollups WHERE (individual_id + (day - date '2000-01-01')) % \(gap) = 0")
            try await body(database)
        }
    }

    @Test func everyGroupingAddsUpToTheDays() async throws {
        try await Self.withSeeded(individuals: 60, days: 130, tag: "ref", gap: 7) { database in
            // Gaps, uneven counts and opted-out people, so that no rollup is uniform.
            try await database.query(
                "UPDATE daily_rollups SET sample_count = 1 + individual_id % 11, value_sum = value_sum / 3 WHERE (individual_id + (day - date '2000-01-01')) % 5 = 1"
            )
            // Days that lose their last value, some of which gain one again and the others go
            // (activity_days follows each step; no day is left without a value, as none is in use).
            let (lastValueGone, comesBack) = (
                "(individual_id + (day - date '2000-01-01')) % 13 = 3", "(individual_id + (day - date '2000-01-01')) % 26 = 3"
            )
            try await database.query("UPDATE daily_rollups SET sample_count = 0, value_sum = 0 WHERE \(unescaped: lastValueGone)")
            try await database.query("UPDATE daily_rollups SET sample_count = 2, value_sum = 150 WHERE \(unescaped: comesBack)")
            try await database.query("DELETE FROM daily_rollups WHERE sample_count = 0")
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
                // A Sunday to a Saturday: a week of one day (its week's other days are not the
                // window's), then six days of the next.
                (.week, CalendarDay(ordinal: monday.ordinal - 1), CalendarDay(ordinal: monday.ordinal + 5), nil),
                // The ends of two weeks and no whole week between them: a Friday to a Tuesday.
                (.week, CalendarDay(ordinal: wednesday.ordinal + 2), CalendarDay(ordinal: wednesday.ordinal + 6), nil),
                (nil, wednesday, thursday, nil), (nil, wednesday, thursday, .female), (.area, wednesday, thursday, nil),
                (.sex, wednesday, thursday, nil),
            ]
            // Each population read both ways: from `activity_days` (kept by the rollup triggers
            // through the seeding and the changes above) and collected by the statement, as
            // before the backfill is done.
            for source in ["activity days", "collected"] {
                try await database.query("UPDATE activity_backfill SET done = \(source == "activity days")")
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
                            let chosen = rows.filter { $0.type == type.storageCode && (sex == nil || $0.sex == sex?.rawValue) }
                            let expected = Self.reference(chosen, query, from: from, to: to)
                            let context =
                                "\(type) \(statistic) by \(groupBy.map { "\($0)" } ?? "nothing") of \(sex?.rawValue ?? "all") \(from.text)…\(to.text)"
                            // Released: every group, then every other one, then the first alone (a
                            // suppressed group's people are not in the population unless a released
                            // group has them).
                            let keys = expected.map(\.key)
                            let everyOther = Set(keys.enumerated().filter { $0.offset % 2 == 0 }.map(\.element))
                            var exact: [ExactGroup] = []
                            for released in [Set(keys), everyOther, Set(keys.prefix(1))] {
                                let (groups, population) = try await GroupAggregateStore(database: database).answer(query) { ($0, released) }
                                exact = groups
                                let want = Set(expected.filter { released.contains($0.key) }.flatMap(\.members)).sorted()
                                #expect(population == want, "\(context) \(released.count) released, \(source)")
                            }
                            #expect(exact.map(\.key) == keys, "\(context)")
                            #expect(expected.count > 0, "\(context)")
                            for (got, want) in zip(exact, expected) {
                                #expect(got.individuals == want.individuals, "\(context) \(got.key)")
                                // A time grouping's members are not collected: its population is read
                                // from `activity_days`.
                                let collected = (query.key == .day || query.key == .week) && source == "activity days" ? [] : want.members
                                #expect(Set(got.members) == Set(collected) && got.members.count == collected.count, "\(context) \(got.key)")
                                // The figure the statistic reads, as the days say; the others not computed.
                                let reads = query.reads
                                #expect(got.bins == (reads == .bins ? want.bins : []), "\(context) \(got.key)")
                                // Sums of doubles in another order: each person's rounding may differ by one unit.
                                #expect(
                                    abs(got.sum - (reads == .sum ? want.sum : 0)) <= (reads == .sum ? want.individuals : 0), "\(context) \(got.key)")
                                #expect(
                                    abs(got.centredSum - (reads == .centredSum ? want.centredSum : 0))
                                        <= (reads == .centredSum ? want.individuals : 0),
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
    }

    /// Migration 0056 on a database with rollups: `activity_days` starts empty and the backfill
    /// adds everyone's days in batches, while days come and go on both sides of where it is.
    @Test func theDaysRolledBeforeActivityDaysAreAddedOnline() async throws {
        try await Self.withSeeded(individuals: 40, days: 60, tag: "fill", gap: 5) { database in
            // As the migration leaves a database written before it.
            try await database.query("TRUNCATE activity_days")
            try await database.query("UPDATE activity_backfill SET done = false, next_individual = 0")
            let store = ActivityDaysStore(database: database)
            #expect(try await store.backfill(individuals: 7) == false)
            #expect(try await store.backfill(individuals: 7) == false)
            let ids = try await PopulationSeeder(database: database).seededIds(tag: "fill").sorted()
            // One individual the batches have done and one they have not: a day loses its values,
            // another goes, a new one comes (a year back, in a month of its own).
            for id in [ids[3], ids[30]] {
                try await database.query(
                    "UPDATE daily_rollups SET sample_count = 0 WHERE individual_id = \(id) AND day = (SELECT max(day) FROM daily_rollups WHERE individual_id = \(id))"
                )
                try await database.query(
                    "DELETE FROM daily_rollups WHERE individual_id = \(id) AND day = (SELECT min(day) FROM daily_rollups WHERE individual_id = \(id))"
                )
                try await database.query(
                    """
                    INSERT INTO daily_rollups (individual_id, sample_type, day, sample_count, value_sum, value_min, value_max)
                    VALUES (\(id), 1, current_date - 365, 3, 210, 60, 80)
                    """)
            }
            let batches = try await ActivityBackfill(database: database, schemaReady: StartupGate(), logger: TestPostgres.logger).pass(batchSize: 7)
            #expect(batches == 4, "40 individuals, 14 done: four batches of 7 and the one that finds none")
            #expect(try await store.backfill(individuals: 7), "done")
            let kept = try await database.query(
                "SELECT sample_type, individual_id, days::text FROM activity_days WHERE NOT isempty(days) ORDER BY 1, 2"
            ).map { try $0.decode((Int16, Int64, String).self) }
            let fromTheDays = try await database.query(
                """
                SELECT sample_type, individual_id, range_agg(daterange(day, day + 1))::text FROM daily_rollups
                WHERE sample_count > 0 GROUP BY 1, 2 ORDER BY 1, 2
                """
            ).map { try $0.decode((Int16, Int64, String).self) }
            #expect(kept.count == 80 && kept.count == fromTheDays.count)
            #expect(zip(kept, fromTheDays).allSatisfy { $0 == $1 })
        }
    }

    /// A day taken away while a backfill batch is about to read it: the removal's transaction holds
    /// its individual (FOR KEY SHARE, in the trigger) when the batch starts, so the batch waits for
    /// it and then reads the days without that one. Without the batch's FOR UPDATE (tried) it reads
    /// the day the uncommitted removal is taking away, writes it, and the day stays.
    @Test func aBatchWaitsForADayBeingTakenAwayAndDoesNotAddItBack() async throws {
        try await Self.withSeeded(individuals: 6, days: 20, tag: "race", gap: 4, connections: 3) { database in
            try await database.query("TRUNCATE activity_days")
            try await database.query("UPDATE activity_backfill SET done = false, next_individual = 0")
            let ids = try await PopulationSeeder(database: database).seededIds(tag: "race").sorted()
            let (person, day) = try await database.query(
                "SELECT individual_id, max(day)::text FROM daily_rollups WHERE individual_id = \(ids[0]) AND sample_count > 0 GROUP BY 1"
            )[0].decode((Int64, String).self)
            let (removed, didRemove) = AsyncStream.makeStream(of: Void.self)
            let (commit, mayCommit) = AsyncStream.makeStream(of: Void.self)
            let removal = Task {
                try await database.withTransaction { connection in
                    _ = try await connection.query(
                        "DELETE FROM daily_rollups WHERE individual_id = \(person) AND day = \(day)::date", logger: TestPostgres.logger)
                    didRemove.finish()
                    for await _ in commit {}
                }
            }
            for await _ in removed {}
            let batch = Task { try await ActivityDaysStore(database: database).backfill(individuals: 10) }
            // The batch either waits on a lock or (without one) has written its days.
            let deadline = ContinuousClock.now + .seconds(60)
            var (waiting, written) = (false, false)
            while !waiting, !written, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                (waiting, written) = try await database.query(
                    """
                    SELECT EXISTS (SELECT FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'),
                           EXISTS (SELECT FROM activity_days)
                    """
                )[0].decode((Bool, Bool).self)
            }
            mayCommit.finish()
            try await removal.value
            #expect(try await batch.value == false)
            let days = try await database.query(
                "SELECT days::text FROM activity_days WHERE individual_id = \(person) ORDER BY sample_type"
            ).map { try $0.decode(String.self) }
            let fromTheDays = try await database.query(
                """
                SELECT range_agg(daterange(day, day + 1))::text FROM daily_rollups
                WHERE individual_id = \(person) AND sample_count > 0 GROUP BY sample_type ORDER BY sample_type
                """
            ).map { try $0.decode(String.self) }
            #expect(waiting, "the batch waited for the removal")
            #expect(days == fromTheDays, "\(day) was taken away")
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
