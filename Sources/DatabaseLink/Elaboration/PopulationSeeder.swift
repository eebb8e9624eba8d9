import Foundation
import PostgresNIO

/// A synthetic population for aggregates and their benchmark: individuals with plausible age,
/// sex and home area, and a daily heart-rate and step-count rollup for each of the last `days`
/// days. Generated inside PostgreSQL (`generate_series`, a fixed random seed per batch), so ten
/// thousand people with a year each take seconds, not an upload per sample. Seeded accounts
/// cannot log in (their password hash is not a hash).
package struct PopulationSeeder: Sendable {
    /// Lombardy's provinces and a few more regions: the areas the population lives in.
    package static let areas = ["IT-MI", "IT-BG", "IT-BS", "IT-CO", "IT-CR", "IT-LC", "IT-LO", "IT-MN", "IT-MB", "IT-PV", "IT-SO", "IT-VA"]

    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// Adds `individuals` people in batches of `batch`, calling `progress` with the number done.
    /// `tag` keeps repeated seedings apart (emails and fiscal codes are unique); `startingAt`
    /// continues a tag's numbering, to add people to an earlier seeding of it.
    package func seed(
        individuals: Int, days: Int, tag: String = "seed", startingAt: Int = 0, batch: Int = 500, randomSeed: Double = 0.42,
        progress: (Int) -> Void = { _ in }
    ) async throws {
        let today = Date()
        var done = 0
        while done < individuals {
            let count = min(batch, individuals - done)
            let first = startingAt + done
            try await database.withTransaction { connection in
                let logger = database.logger
                _ = try await connection.query("SELECT setseed(\(randomSeed * Double(first % 997 + 1) / 998))", logger: logger).collect()
                _ = try await connection.query(
                    """
                    WITH people AS (
                        INSERT INTO individuals (email, password_hash, fiscal_code, full_name, birth_date, sex, home_area)
                        SELECT \(tag) || n || '@seed.invalid', '!seeded: cannot log in', upper(\(tag)) || lpad(n::text, 9, '0'), 'Seeded ' || n,
                               date '1930-01-01' + (random() * 27000)::int,
                               (ARRAY['female', 'male', 'female', 'male', 'other'])[1 + floor(random() * 5)::int],
                               (\(Self.areas)::text[])[1 + floor(random() * \(Self.areas.count))::int]
                        FROM generate_series(\(first), \(first + count - 1)) AS n
                        RETURNING id, birth_date
                    ),
                    baseline AS (   -- each person's own level: heart rate rises a little with age, steps fall
                        SELECT id, 62 + random() * 14 + extract(year FROM age(birth_date)) / 12 AS heart,
                               greatest(800, 11000 - extract(year FROM age(birth_date)) * 70 + (random() - 0.5) * 6000) AS steps
                        FROM people
                    ),
                    days AS (
                        SELECT d::date AS day FROM generate_series(\(today)::date - (\(days - 1))::int4, \(today)::date, interval '1 day') AS d
                    )
                    INSERT INTO daily_rollups (individual_id, sample_type, day, sample_count, value_sum, value_min, value_max)
                    SELECT b.id, 1, d.day, 1440, 1440 * h.value, h.value - 12, h.value + 30
                    FROM baseline b CROSS JOIN days d CROSS JOIN LATERAL (SELECT (b.heart + (random() - 0.5) * 8)::real AS value) h
                    UNION ALL
                    SELECT b.id, 2, d.day, 96, s.value, 0, s.value / 20
                    FROM baseline b CROSS JOIN days d CROSS JOIN LATERAL (SELECT greatest(0, b.steps * (0.6 + random() * 0.8))::real AS value) s
                    """, logger: logger)
            }
            done += count
            progress(done)
        }
    }

    /// The ids of the individuals seeded with `tag`, in seeding order (n = 0, 1, …).
    package func seededIds(tag: String) async throws -> [Int64] {
        try await database.query(
            """
            SELECT id FROM individuals WHERE fiscal_code LIKE upper(\(tag)) || '%' AND email LIKE \(tag) || '%@seed.invalid' ORDER BY fiscal_code
            """
        ).map { try $0.decode(Int64.self) }
    }

    /// A heart-rate reading every whole second, around 70 bpm, for each individual from `from` to
    /// `to` (whole UTC minutes): the recent history a watch streaming all day leaves, which the
    /// watch rules read around every upload. Blocks written directly (no rollups, no detection);
    /// blocks that already exist are left as they are.
    package func seedHeartRate(individualIds: [Int64], from: Date, to: Date, batch: Int = 200) async throws {
        for start in stride(from: 0, to: individualIds.count, by: batch) {
            let ids = Array(individualIds[start..<min(start + batch, individualIds.count)])
            try await database.query(
                """
                INSERT INTO sample_blocks (individual_id, sample_type, block_start, offsets_ms, vals, keys)
                SELECT i, 1, m, b.offsets, b.vals, b.keys
                FROM unnest(\(ids)::int8[]) AS i,
                     generate_series(date_trunc('minute', \(from)::timestamptz), \(to)::timestamptz - interval '1 minute', interval '1 minute') AS m,
                     LATERAL (
                         SELECT array_agg(s * 1000 ORDER BY s) AS offsets, array_agg((66 + random() * 8)::real ORDER BY s) AS vals,
                                array_agg((random() * 9e18)::int8 ORDER BY s) AS keys
                         FROM generate_series(0, 59) AS s WHERE i IS NOT NULL AND m IS NOT NULL
                     ) AS b
                ON CONFLICT DO NOTHING
                """)
        }
    }
}
