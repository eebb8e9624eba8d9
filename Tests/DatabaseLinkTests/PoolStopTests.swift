import DatabaseLink
import DatabaseTestSupport
import PostgresNIO
import Testing

@Suite("Stopping a pool: bounded, so a pool that never returns cannot hang its process")
struct PoolStopTests {
    @Test func aPoolStopsWithinTheLimitAndTheWaitIsBounded() async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
        let answer = try await database.whileRunning { try await database.query("SELECT 41 + 1").first?.decode(Int.self) }
        #expect(answer == 42)
        let second = Database(configuration: url.clientConfiguration(maximumConnections: 1), logger: TestPostgres.logger)
        let pool = second.startPool()  // a client runs once
        _ = try await second.query("SELECT 1")
        #expect(await second.stop(pool, within: .seconds(30)), "a healthy pool stops when asked")

        // What `stop` does with a run that ignores cancellation: it gives up at the limit.
        let stubborn = Task {
            while true { try? await Task.sleep(for: .seconds(3_600)) }
        }
        let started = ContinuousClock.now
        #expect(await Database.ended(stubborn, within: .milliseconds(300)) == false)
        #expect(ContinuousClock.now - started < .seconds(10))

        // A caller cancelled while it waits (a shutdown past its bound) stops waiting at once.
        let waiting = Task { await Database.ended(stubborn, within: .seconds(600)) }
        try await Task.sleep(for: .milliseconds(100))
        let cancelled = ContinuousClock.now
        waiting.cancel()
        #expect(await waiting.value == false)
        #expect(ContinuousClock.now - cancelled < .seconds(10))
        stubborn.cancel()
    }
}
