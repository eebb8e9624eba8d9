import PostgresNIO

/// `activity_days` (migration 0056): each individual's days with values, per type, from which a
/// time grouping's population is read. The rollup triggers keep it; this adds the days rolled
/// before the migration, online.
package struct ActivityDaysStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// Adds the days of the next `individuals` individuals (by id, from where the last batch
    /// ended) in one transaction; true once everyone is done (nothing was left to do).
    ///
    /// The batch's individuals are locked FOR UPDATE before their days are read: a statement that
    /// takes a day away (`data4help_roll_changes`) takes its individual FOR KEY SHARE first, so it
    /// either ends before the batch reads (and the batch does not see the day) or waits for the
    /// batch to commit and then takes the day away from what the batch wrote. A new daily row of
    /// those individuals (its foreign key's lock) and a day taken away wait for the batch (about
    /// 150 ms for 100 people with a year of two types each); values added to a day do not. The days are added to what the triggers wrote meanwhile, never in its place.
    /// One instance runs a batch at a time (the state row's lock); another waits, then goes on.
    package func backfill(individuals: Int) async throws -> Bool {
        try await database.withTransaction { connection in
            let state = try await connection.query(
                "SELECT next_individual, done FROM activity_backfill FOR UPDATE", logger: database.logger
            ).collect()
            guard let (next, done) = try state.first?.decode((Int64, Bool).self), !done else { return true }
            let batch = try await connection.query(
                "SELECT id FROM individuals WHERE id >= \(next) ORDER BY id LIMIT \(individuals) FOR UPDATE",
                logger: database.logger
            ).collect().map { try $0.decode(Int64.self) }
            guard let last = batch.last else {
                _ = try await connection.query("UPDATE activity_backfill SET done = true", logger: database.logger)
                return true
            }
            _ = try await connection.query(
                """
                INSERT INTO activity_days AS d (sample_type, individual_id, days)
                SELECT r.sample_type, r.individual_id, range_agg(daterange(r.day, r.day + 1))
                FROM daily_rollups r
                WHERE r.individual_id = ANY (\(batch)::int8[]) AND r.sample_count > 0
                GROUP BY 1, 2
                ORDER BY 1, 2
                ON CONFLICT (sample_type, individual_id) DO UPDATE SET days = d.days + EXCLUDED.days
                """, logger: database.logger)
            _ = try await connection.query(
                "UPDATE activity_backfill SET next_individual = \(last) + 1", logger: database.logger)
            return false
        }
    }
}
