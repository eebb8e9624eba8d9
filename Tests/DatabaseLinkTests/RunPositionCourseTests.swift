import Data4HelpCore
import DatabaseLink
import DatabaseTestSupport
import Foundation
import PostgresNIO
import Testing

@Suite("A runner's post reads the course only when the server does not hold it")
struct RunPositionCourseTests {
    @Test func thePathComesOnlyForAnotherVersion() async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 2), logger: TestPostgres.logger)
        try await database.whileRunning {
            let ids = try await database.query(
                """
                INSERT INTO individuals (email, password_hash, fiscal_code, full_name, birth_date, sex, home_area)
                SELECT 'course' || n || '@test.invalid', '!', 'COURSE' || lpad(n::text, 10, '0'), 'Runner ' || n, date '1990-01-01', 'other', 'IT-MI'
                FROM generate_series(1, 2) AS n
                RETURNING id
                """
            ).map { try $0.decode(Int64.self) }
            let (organiser, runner) = (ids[0], ids[1])
            let path = "[[9.1725,45.4755],[9.1725,45.498]]"
            let now = Date()
            let events = RunEventStore(database: database)
            let event = try await events.create(
                organiserId: organiser,
                RunEventDraft(
                    name: "Course", description: "", startsAt: now.addingTimeInterval(3_600), endsAt: now.addingTimeInterval(7_200),
                    enrolmentDeadline: now.addingTimeInterval(3_600), maxParticipants: 10, path: path, lengthMeters: 2_502))
            _ = try await events.enrol(publicId: event.publicId, individualId: runner, displayName: "R") { _ in }
            let store = RunPositionStore(database: database)

            /// The path and version the post's statement read, writing nothing.
            func read(holding known: Int64?) async throws -> (path: String, version: Int64) {
                var seen: (String, Int64)?
                _ = try await store.apply(publicId: event.publicId, individualId: runner, knownCourse: known) { event, state, _, version in
                    seen = (event.path, version)
                    return RunPositionWrite(positions: [], state: state, dropped: 0, announcement: nil)
                }
                return try #require(seen)
            }

            let first = try await read(holding: nil)
            #expect(first.path.filter { !$0.isWhitespace } == path, "a server that holds no course gets it")
            let again = try await read(holding: first.version)
            #expect(again.path.isEmpty, "the course the server holds is not sent again")
            #expect(again.version == first.version)
            let other = try await read(holding: first.version - 1)
            #expect(other.path.filter { !$0.isWhitespace } == path, "an older course held: the current one is sent")

            // A change of the event is a new version: the course the server held is stale.
            _ = try await database.query(
                "UPDATE run_events SET updated_at = updated_at + interval '1 microsecond' WHERE id = \(event.id)")
            let changed = try await read(holding: first.version)
            #expect(changed.version == first.version + 1, "microseconds, exact")
            #expect(!changed.path.isEmpty)
        }
    }
}
