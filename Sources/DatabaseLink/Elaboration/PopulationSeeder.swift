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
}
