import Foundation
import PostgresNIO

/// What the exact per-group query needs to know, in database terms.
package struct GroupQuery: Sendable {
    package enum Key: String, Sendable {
        case none, area, ageBand, sex, day, week
    }

    /// What the statistic reads of each group besides its individuals (always counted, and their
    /// members collected where `GroupAggregateStore.answer` needs them): the statement computes
    /// that figure and no other, since each costs an expression per value (half a million values
    /// in a time grouping over 10,000 people).
    package enum Figure: Sendable, CaseIterable {
        /// Count: nothing more.
        case individuals
        /// Mean: the values' sum centred on the range's midpoint.
        case centredSum
        /// Sum: the values' plain sum.
        case sum
        /// Histogram, quantiles: how many values fall in each bin.
        case bins
    }

    package var sampleType: Int16
    /// Whether an individual's day counts with its total (steps) or its mean (heart rate).
    package var dailyTotal: Bool
    package var areas: [String]
    /// Lower bounds of the age bands (0, 5, … 90); empty for all.
    package var ageBands: [Int32]
    package var sex: String?
    /// The window, inclusive, as `YYYY-MM-DD`.
    package var from: String
    package var to: String
    /// Months (first days) whose totals are read from `monthly_rollups`, and days read from
    /// `daily_rollups` and added to them or subtracted: together, the window. Time groups ignore
    /// these and read the window's days.
    package var months: [String]
    package var addedDays: [String]
    package var subtractedDays: [String]
    /// Week groups: the window's whole weeks (Mondays, in order and contiguous: read as one range
    /// of `weekly_rollups`), and the days of its partial weeks (at most two ranges, each within
    /// the week whose Monday it carries, as `AggregateSpec.wholeWeeks` makes them), read from
    /// `daily_rollups`.
    package var weeks: [String] = []
    package var weekEdges: [(from: String, to: String, week: String)] = []
    /// What the statistic reads; the other figures of `ExactGroup` stay 0 (bins: empty).
    package var reads: Figure = .individuals
    package var key: Key
    package var lower: Double
    package var upper: Double
    package var binWidth: Double
    package var binCount: Int32
    package var resolution: Double

    package init(
        sampleType: Int16, dailyTotal: Bool, areas: [String], ageBands: [Int32], sex: String?, from: String, to: String,
        months: [String], addedDays: [String], subtractedDays: [String], key: Key, lower: Double, upper: Double, binWidth: Double,
        binCount: Int32, resolution: Double
    ) {
        self.sampleType = sampleType
        self.dailyTotal = dailyTotal
        self.areas = areas
        self.ageBands = ageBands
        self.sex = sex
        self.from = from
        self.to = to
        self.months = months
        self.addedDays = addedDays
        self.subtractedDays = subtractedDays
        self.key = key
        self.lower = lower
        self.upper = upper
        self.binWidth = binWidth
        self.binCount = binCount
        self.resolution = resolution
    }
}

/// Exact, bounded aggregates of one group: individuals, their clamped values summed in
/// fixed-point units (plain and centred on the range's midpoint), and how many fall in each bin.
/// These never leave the process: the elaboration module adds noise before anything is shown.
package struct ExactGroup: Sendable {
    package var key: String
    package var individuals: Int64
    package var centredSum: Int64
    package var sum: Int64
    package var bins: [Int64]
    /// The individuals of the group (internal ids): who a released answer included, for their
    /// privacy record. Empty where the population is read from `activity_days` instead.
    package var members: [Int64]

    package init(key: String, individuals: Int64, centredSum: Int64, sum: Int64, bins: [Int64], members: [Int64] = []) {
        self.key = key
        self.individuals = individuals
        self.centredSum = centredSum
        self.sum = sum
        self.bins = bins
        self.members = members
    }
}

/// The one query of the Data Elaboration Module, run in a read-only transaction (so that it can
/// be sent to a replica).
package struct GroupAggregateStore: Sendable {
    let database: Database

    /// Person groups: an individual's parts of the window added up (months and days, some
    /// subtracted); the group comes from the person (area, age band, sex), `g` is empty. The
    /// counts are added as `float8`: exact (they stay far below 2⁵³) and several times cheaper
    /// to add than the `numeric` that `sum(int8)` makes.
    private static let sumParts = """
        SELECT individual_id, ''::text AS g, sum(days) AS days, sum(sample_count) AS sample_count, sum(value_sum) AS value_sum
        FROM parts GROUP BY 1
        HAVING sum(days) > 0 AND sum(sample_count) > 0
        """
    /// Day groups: an individual's day is one row of `daily_rollups`, nothing to add up.
    private static let dayParts = """
        SELECT individual_id, day AS g, 1::int8 AS days, sample_count::int8, value_sum FROM daily
        """
    /// Week groups: the window's whole weeks, the rows as they are, one range of the index, which
    /// PostgreSQL reads in week order and aggregates week by week as it goes.
    private static let wholeWeekParts = """
        SELECT individual_id, week AS g, days::int8, sample_count, value_sum FROM weekly
        """
    /// Week groups: the partial weeks' totals, added up from their days (`edge_totals`). They are
    /// aggregated on their own and the two answers joined (`figures`; a group is a week, and no
    /// week is in both): one aggregate of both, even with no partial week, made PostgreSQL hash
    /// every value (`psql`, 49 whole weeks of 10,000 people: 165 → 145 ms without the union),
    /// and with partial weeks it took about a sixth longer (a Wednesday to a Tuesday over 49
    /// weeks, eight interleaved runs each: median 199 against 168 ms). A filter on a constant
    /// column of one union did not separate them: the planner kept both branches under one
    /// aggregate, one of them empty, and hashed.
    private static let edgeWeekParts = """
        SELECT individual_id, week AS g, count(*) AS days, sum(sample_count)::int8 AS sample_count, sum(value_sum) AS value_sum
        FROM edges GROUP BY 1, 2
        """

    /// Everyone not opted out (migration 0035), when no area, sex or age band narrows the
    /// population and none is the grouping: the few who opted out (their partial index, migration
    /// 0052) hashed once per process and each value checked against them, where a join to every
    /// individual cost a hash probe per value (half a million in a time grouping). `NOT IN`, not
    /// `NOT EXISTS`: the planner makes the first a hashed filter on the scan and the second a
    /// hash anti-join above the parallel append, which cost a third more (`psql`, by week:
    /// 185 → 138 ms). `id` is the primary key, so no NULL can make `NOT IN` empty.
    private static let everyone = """
        WHERE t.individual_id NOT IN (SELECT o.id FROM individuals o WHERE o.aggregates_opt_out)
        """
    /// The figures of each group and, for histograms and quantiles, bin. Each value's bin is
    /// joined to the list of bins rather than computed in GROUP BY: the planner then knows there
    /// are groups × bins of them (not one per row), hashes instead of sorting, and lets two
    /// workers aggregate. The join costs a probe per value, which is why only bins pay it.
    /// `parts`: the names of each part's values and their bins (the whole statement's, and the
    /// partial weeks'), each part aggregated on its own. `members`: whether each group's members
    /// are collected (else an empty list: the population is read from `activity_days`).
    private static func figures(_ figure: GroupQuery.Figure, parts: [(values: String, binned: String)], members: Bool) -> String {
        let sums =
            switch figure {
            case .centredSum: "sum(centred)::int8, 0::int8"
            case .sum: "0::int8, sum(units)::int8"
            case .individuals, .bins: "0::int8, 0::int8"
            }
        return parts.map { part in
            let (bin, from) =
                figure == .bins
                ? ("b.bin", "\(part.binned) v JOIN bins b ON b.bin = v.bin GROUP BY g, b.bin") : ("0", "\(part.values) GROUP BY g")
            // data4help_collect_ids (migration 0047): collected by parallel workers too.
            let collected = members ? "data4help_collect_ids(person)" : "'{}'::int8[]"
            return "SELECT g::text, \(bin), count(*), \(sums), \(collected) FROM \(from)"
        }.joined(separator: "\nUNION ALL\n")
    }

    /// One value per individual and group of the totals named (clamped to the type's range: their
    /// mean daily total, or their mean reading), and its fixed-point units (plain and centred on
    /// the range's midpoint). `people`: the group's expression and how the individuals are met.
    /// Written once for each part of a statement; the numbers are `bounds`' (bound once).
    private static func personValues(of totals: String, people: (group: String, join: String)) -> String {
        """

            SELECT g, person, v, round((v - middle) * resolution) AS centred, round(v * resolution) AS units
            FROM (
                SELECT \(people.group) AS g, t.individual_id AS person, b.middle, b.resolution,
                       least(greatest(CASE WHEN b.daily_total THEN t.value_sum / t.days ELSE t.value_sum / t.sample_count END, b.lower), b.upper) AS v
                FROM \(totals) t CROSS JOIN bounds b
                \(people.join)
            ) AS valued

        """
    }

    /// Each value's bin, from the values named.
    private static func bins(of values: String) -> String {
        """

            SELECT g, person, least(floor((v - b.lower) / b.bin_width)::int4, b.bin_count - 1) AS bin FROM \(values) CROSS JOIN bounds b

        """
    }

    /// Each individual's totals per group, as the grouping reads them.
    private static func parts(_ query: GroupQuery) -> String {
        switch query.key {
        case .day: dayParts
        case .week: wholeWeekParts
        default: sumParts
        }
    }

    package init(database: Database) {
        self.database = database
    }

    /// Per group: one value per individual (over the group's days: their mean daily total, or
    /// their mean reading — the sum of all readings over their count — clamped to the type's
    /// range), then their count and what the statistic reads of them (`GroupQuery.reads`).
    /// `release` decides from these exact groups what is released and which groups that is; the
    /// answer is what it decided and the population of those groups (who they included, each once
    /// and in ascending order: the privacy record's), both read in one snapshot.
    ///
    /// A time grouping's population is read from `activity_days` (migration 0056) once its
    /// backfill is done: the individuals with a value on a released day or in a released week
    /// (within the window), met as the statement met them. Until then, and for person groupings
    /// (one value a person), the statement collects each group's members and the population is
    /// their union (`MemberUnion`).
    package func answer<Released: Sendable>(
        _ query: GroupQuery, release: ([ExactGroup]) throws -> (released: Released, keys: Set<String>)
    ) async throws -> (released: Released, population: [Int64]) {
        let personKey: String? =
            switch query.key {
            case .area: "p.home_area"
            case .ageBand: "p.band::text"
            case .sex: "p.sex"
            default: nil
            }
        let wholePopulation = personKey == nil && query.areas.isEmpty && query.sex == nil && query.ageBands.isEmpty
        let people = (group: personKey ?? "t.g", join: wholePopulation ? Self.everyone : "JOIN people p ON p.id = t.individual_id")
        // The CTEs of each part's values and bins: every statement's (for week groups, their whole
        // weeks), and the partial weeks'.
        let (mainPart, partialWeeksPart) = ((values: "values", binned: "binned"), (values: "edge_values", binned: "edge_binned"))
        // Every key's parts are bound, but only the CTEs the statement reads run: PostgreSQL skips
        // a WITH query nothing references. Week groups read the whole weeks as one range of
        // Mondays (none: an empty range) and the partial weeks' days as at most two ranges.
        let (firstWeek, lastWeek) = (query.weeks.first ?? "infinity", query.weeks.last ?? "-infinity")  // in order, contiguous
        let edge = (0..<2).map { $0 < query.weekEdges.count ? query.weekEdges[$0] : (from: "infinity", to: "-infinity", week: "infinity") }
        // One snapshot: the population is read after the groups, as they were.
        return try await database.withTransaction(.readOnlySnapshot) { connection in
            // One round trip for the settings, local to the transaction: no JIT (compiling costs
            // more than it saves here); 64 MB of work_mem, since the planner sizes each group's
            // member list (`data4help_collect_ids`) generously and would sort rather than hash at
            // the default 4 MB (the real lists are a few MB for a time grouping of 10,000 people);
            // and the random page cost of a solid-state disk (1.1 against the default 4, which
            // models spinning disks): with 4, the planner read all of `weekly_rollups` rather
            // than half of its covering index (a week grouping: 215 → 169 ms in `psql`).
            // With them, whether `activity_days` holds everyone's days yet (migration 0056).
            let settings = try await connection.query(
                """
                SELECT set_config('jit', 'off', true), set_config('work_mem', '64MB', true), set_config('random_page_cost', '1.1', true),
                       coalesce((SELECT done FROM activity_backfill), false)
                """,
                logger: database.logger
            ).collect()
            let activityReady = try settings.first.map { try $0.decode((String, String, String, Bool).self).3 } ?? false
            let byActivity = (query.key == .day || query.key == .week) && activityReady
            let rows = try await connection.query(
                """
                WITH bounds AS NOT MATERIALIZED (   -- one row of constants, which the planner folds into each expression
                    SELECT \(query.dailyTotal)::bool AS daily_total, \(query.lower)::float8 AS lower, \(query.upper)::float8 AS upper,
                           \((query.lower + query.upper) / 2)::float8 AS middle, \(query.resolution)::float8 AS resolution,
                           \(query.binWidth)::float8 AS bin_width, \(query.binCount)::int4 AS bin_count
                ),
                people AS NOT MATERIALIZED (\(peopleOf: query)),   -- read in each part of `figures`, never by one process alone
                daily AS (   -- index only: daily_rollups_type_day_idx
                    SELECT individual_id, day, sample_count, value_sum FROM daily_rollups
                    WHERE sample_type = \(query.sampleType) AND day BETWEEN \(query.from)::date AND \(query.to)::date AND sample_count > 0
                ),
                weekly AS (   -- index only: weekly_rollups_type_week_idx
                    SELECT individual_id, week, days, sample_count, value_sum FROM weekly_rollups
                    WHERE sample_type = \(query.sampleType) AND week BETWEEN \(firstWeek)::date AND \(lastWeek)::date
                      AND days > 0 AND sample_count > 0
                ),
                edges AS (   -- index only, each range on its own (an OR of the two made a bitmap heap scan)
                    -- Each range lies in one week, given: no date_trunc per row.
                    SELECT individual_id, \(edge[0].week)::date AS week, sample_count, value_sum FROM daily_rollups
                    WHERE sample_type = \(query.sampleType) AND sample_count > 0 AND day BETWEEN \(edge[0].from)::date AND \(edge[0].to)::date
                    UNION ALL
                    SELECT individual_id, \(edge[1].week)::date, sample_count, value_sum FROM daily_rollups
                    WHERE sample_type = \(query.sampleType) AND sample_count > 0 AND day BETWEEN \(edge[1].from)::date AND \(edge[1].to)::date
                ),
                parts AS (   -- index: monthly_rollups_type_month_idx, daily_rollups_type_day_idx
                    -- Every scan by index conditions alone (no join to a list of ranges: with the
                    -- list a parameter, the planner once read all daily rows), so that two
                    -- workers can share them and add up each individual's parts.
                    SELECT m.individual_id, m.days::float8 AS days, m.sample_count::float8 AS sample_count, m.value_sum
                    FROM monthly_rollups m
                    WHERE m.sample_type = \(query.sampleType) AND m.month = ANY (\(query.months)::date[])
                    UNION ALL
                    SELECT r.individual_id, 1, r.sample_count, r.value_sum
                    FROM daily_rollups r
                    WHERE r.sample_type = \(query.sampleType) AND r.day = ANY (\(query.addedDays)::date[])
                    UNION ALL
                    SELECT r.individual_id, -1, -r.sample_count, -r.value_sum
                    FROM daily_rollups r
                    WHERE r.sample_type = \(query.sampleType) AND r.day = ANY (\(query.subtractedDays)::date[])
                ),
                totals AS (   -- each individual's totals per group, before meeting the people
                    \(unescaped: Self.parts(query))
                ),
                edge_totals AS (   -- week groups' partial weeks (read only when there are some)
                    \(unescaped: Self.edgeWeekParts)
                ),
                -- One value per individual and group, and its fixed-point units. Not materialised
                -- although `binned` names it too: a materialised WITH query is read by one process.
                \(unescaped: mainPart.values) AS NOT MATERIALIZED (\(unescaped: Self.personValues(of: "totals", people: people))),
                \(unescaped: mainPart.binned) AS NOT MATERIALIZED (\(unescaped: Self.bins(of: mainPart.values))),
                \(unescaped: partialWeeksPart.values) AS NOT MATERIALIZED (\(unescaped: Self.personValues(of: "edge_totals", people: people))),
                \(unescaped: partialWeeksPart.binned) AS NOT MATERIALIZED (\(unescaped: Self.bins(of: partialWeeksPart.values))),
                bins AS NOT MATERIALIZED (   -- joined in each part: materialised, only one process could read it
                    SELECT bin FROM bounds b CROSS JOIN generate_series(0, b.bin_count - 1) AS bin
                )
                \(unescaped: Self.figures(query.reads, parts: query.key == .week && !query.weekEdges.isEmpty ? [mainPart, partialWeeksPart] : [mainPart], members: !byActivity))
                """, logger: database.logger
            ).collect()
            let exact = try Self.groups(rows, query)
            let (released, keys) = try release(exact)
            guard !keys.isEmpty else { return (released, []) }
            guard byActivity else { return (released, MemberUnion.population(of: exact, released: keys)) }
            return (released, try await population(of: query, keys: keys, people: people, on: connection))
        }
    }

    /// The individuals with a value in the groups named (days, or weeks within the window), met as
    /// the statement met them (`people`), from `activity_days`: one row a person, their days one
    /// `datemultirange`.
    private func population(
        of query: GroupQuery, keys: Set<String>, people: (group: String, join: String), on connection: LeasedConnection
    ) async throws -> [Int64] {
        let span: Int32 = query.key == .week ? 7 : 1
        let rows = try await connection.query(
            """
            WITH released AS (   -- the released days, or the released weeks' days within the window
                SELECT range_agg(daterange(greatest(k.day, \(query.from)::date), least(k.day + \(span), \(query.to)::date + 1))) AS days
                FROM unnest(\(keys.sorted())::text[]::date[]) AS k(day)
            ),
            people AS NOT MATERIALIZED (\(peopleOf: query))
            SELECT coalesce(array_agg(t.individual_id ORDER BY t.individual_id), '{}') FROM (
                SELECT a.individual_id FROM activity_days a CROSS JOIN released r
                WHERE a.sample_type = \(query.sampleType) AND a.days && r.days
            ) AS t
            \(unescaped: people.join)
            """, logger: database.logger
        ).collect()
        return try rows.first?.decode(Int8ArrayColumn.self).values ?? []
    }

    /// The exact groups of the statement's rows (each part's, added up), in key order.
    private static func groups(_ rows: [PostgresRow], _ query: GroupQuery) throws -> [ExactGroup] {
        var groups: [String: ExactGroup] = [:]
        for row in rows {
            let (g, bin, count, centred, sum, members) = try row.decode((String, Int32, Int64, Int64, Int64, Int8ArrayColumn).self)
            let bins = query.reads == .bins ? Array(repeating: Int64(0), count: Int(query.binCount)) : []
            var group = groups[g] ?? ExactGroup(key: g, individuals: 0, centredSum: 0, sum: 0, bins: bins)
            group.individuals += count
            group.centredSum += centred
            group.sum += sum
            if query.reads == .bins { group.bins[Int(bin)] += count }
            group.members += members.values
            groups[g] = group
        }
        return groups.values.sorted { $0.key < $1.key }
    }
}

extension PostgresQuery.StringInterpolation {
    /// The individuals an aggregate may count, as `GroupQuery` narrows them: everyone who has not
    /// opted out (migration 0035), of the areas and sex asked for, and in the age bands asked for
    /// (their age on the window's first day, in 5-year bands up to 90). Written once for each
    /// statement that meets them (the grouped statement and its population), the values bound.
    mutating func appendInterpolation(peopleOf query: GroupQuery) {
        appendLiteral("SELECT id, home_area, sex, band FROM (")
        appendLiteral(" SELECT i.id, i.home_area, i.sex, least(floor(extract(year FROM age(")
        appendInterpolation(query.from)
        appendLiteral("::date, i.birth_date)) / 5)::int * 5, 90) AS band FROM individuals i")
        appendLiteral(" WHERE NOT i.aggregates_opt_out AND (cardinality(")
        appendInterpolation(query.areas)
        appendLiteral("::text[]) = 0 OR i.home_area = ANY (")
        appendInterpolation(query.areas)
        appendLiteral("::text[])) AND (")
        appendInterpolation(query.sex)
        appendLiteral("::text IS NULL OR i.sex = ")
        appendInterpolation(query.sex)
        appendLiteral("::text)) AS i WHERE cardinality(")
        appendInterpolation(query.ageBands)
        appendLiteral("::int4[]) = 0 OR band = ANY (")
        appendInterpolation(query.ageBands)
        appendLiteral("::int4[])")
    }
}
