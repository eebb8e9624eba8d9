import Data4HelpCore
import DatabaseLink
import DatabaseTestSupport
import Foundation
import PostgresNIO
import Testing

@Suite("A runner's post: the course only when the server does not hold it, and no update lost between posts")
struct RunPositionCourseTests {
    /// An event starting in an hour with one runner enrolled: the event and the runner's id.
    static func enrolled(_ database: Database) async throws -> (event: RunEventRecord, runner: Int64) {
        let ids = try await database.query(
            """
            INSERT INTO individuals (email, password_hash, fiscal_code, full_name, birth_date, sex, home_area)
            SELECT 'course' || n || '@test.invalid', '!', 'COURSE' || lpad(n::text, 10, '0'), 'Runner ' || n, date '1990-01-01', 'other', 'IT-MI'
            FROM generate_series(1, 2) AS n
            RETURNING id
            """
        ).map { try $0.decode(Int64.self) }
        let (organiser, runner) = (ids[0], ids[1])
        let now = Date()
        let events = RunEventStore(database: database)
        let event = try await events.create(
            organiserId: organiser,
            RunEventDraft(
                name: "Course", description: "", startsAt: now.addingTimeInterval(3_600), endsAt: now.addingTimeInterval(7_200),
                enrolmentDeadline: now.addingTimeInterval(3_600), maxParticipants: 10, path: path, lengthMeters: 2_502))
        _ = try await events.enrol(publicId: event.publicId, individualId: runner, displayName: "R") { _ in }
        return (event, runner)
    }

    static let path = "[[9.1725,45.4755],[9.1725,45.498]]"

    @Test func thePathComesOnlyForAnotherVersion() async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 2), logger: TestPostgres.logger)
        try await database.whileRunning {
            let (event, runner) = try await Self.enrolled(database)
            let path = Self.path
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

    /// Posts of one runner at once: each reads the state without a lock and writes it back only
    /// if nobody wrote it meanwhile, else goes again with the row locked. Each post here adds one
    /// metre and one fix: a post that wrote over another's state would leave fewer metres than
    /// posts.
    @Test func concurrentPostsOfOneRunnerLoseNoUpdate() async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 6), logger: TestPostgres.logger)
        try await database.whileRunning {
            let (event, runner) = try await Self.enrolled(database)
            let store = RunPositionStore(database: database)
            let posts = 40
            let stored = try await withThrowingTaskGroup(of: Int.self) { group in
                for post in 0..<posts {
                    group.addTask {
                        try await store.apply(publicId: event.publicId, individualId: runner, knownCourse: nil) { _, state, _, _ in
                            var next = state
                            next.distanceMeters += 1
                            let fix = RunPositionRecord(
                                timeMs: 1_800_000_000_000 + Int64(post) * 1_000, latitude: 45.48, longitude: 9.1725, accuracy: nil,
                                distanceMeters: 1, offsetMeters: 0)
                            return RunPositionWrite(positions: [fix], state: next, dropped: 0, announcement: nil)
                        }.stored
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(stored == posts)
            let row = try await database.query(
                "SELECT distance_meters, dropped_fixes, (SELECT count(*) FROM run_positions WHERE run_id = \(event.id)) FROM run_participants WHERE run_id = \(event.id)"
            )[0].decode((Double, Int32, Int64).self)
            #expect(row.0 == Double(posts), "every post's metre counted")
            #expect(row.1 == 0)
            #expect(row.2 == Int64(posts))

            // The same fix again is stored once and counted as dropped.
            let again = try await store.apply(publicId: event.publicId, individualId: runner, knownCourse: nil) { _, state, _, _ in
                let fix = RunPositionRecord(
                    timeMs: 1_800_000_000_000, latitude: 45.48, longitude: 9.1725, accuracy: nil, distanceMeters: 1, offsetMeters: 0)
                return RunPositionWrite(positions: [fix], state: state, dropped: 0, announcement: nil)
            }
            #expect(again.stored == 0)
            let dropped = try await database.query("SELECT dropped_fixes FROM run_participants WHERE run_id = \(event.id)")[0].decode(Int32.self)
            #expect(dropped == 1)
        }
    }
}
