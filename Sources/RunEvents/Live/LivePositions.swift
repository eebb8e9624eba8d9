import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation
import Synchronization

/// A position as a runner's phone sends it.
package struct PositionFix: Sendable, Equatable {
    package var latitude: Double
    package var longitude: Double
    package var accuracy: Double?
    package var time: Date

    package init(latitude: Double, longitude: Double, accuracy: Double?, time: Date) {
        self.latitude = latitude
        self.longitude = longitude
        self.accuracy = accuracy
        self.time = time
    }
}

/// What a batch of positions did.
package struct PositionBatchResult: Sendable, Equatable {
    package struct Dropped: Sendable, Equatable {
        package var duplicate = 0
        package var implausible = 0
        package var inaccurate = 0
        package var outsideRun = 0
        package var total: Int { duplicate + implausible + inaccurate + outsideRun }
    }

    package var accepted: Int
    package var dropped: Dropped
    package var state: RunnerState
}

/// The Live Data Handler of the design: applies runners' positions (plausibility, projection
/// onto the course, monotone progress, finish), keeps them for replay, and announces each
/// runner's new state to every instance (`RunPositionStore.channel`).
package struct LivePositions: Sendable {
    /// Faster than this between two fixes is a GPS jump, not a runner.
    package static let maximumSpeed = 12.0
    /// Fixes less accurate than this are not a runner's position.
    package static let maximumAccuracy = 100.0
    package static let maximumBatch = 1_000

    let store: RunPositionStore
    let events: RunEventStore
    let courses: CourseCache

    package init(database: Database) {
        self.store = RunPositionStore(database: database)
        self.events = RunEventStore(database: database)
        self.courses = CourseCache()
    }

    /// The event and every runner's state, for a spectator's first picture.
    package func snapshot(of runId: UUID) async throws -> LiveBoard {
        guard let event = try await events.event(publicId: runId) else { throw RunEventError.notFound }
        return LiveBoard(event: try RunEvent(event), records: try await store.states(runId: event.id))
    }

    /// Every runner's state, ranked (public).
    package func leaderboard(of runId: UUID) async throws -> [RunnerState] {
        guard let event = try await events.event(publicId: runId) else { throw RunEventError.notFound }
        return RunnerState.ranked(
            try await store.states(runId: event.id).map {
                RunnerState($0, startsAt: event.startsAt, lengthMeters: event.lengthMeters)
            }, startsAt: event.startsAt)
    }

    /// The individual's enrolments, oldest first, with their runner's state (for their export).
    package func enrolments(of individual: IndividualID) async throws -> [(runId: UUID, enrolledAt: Date, state: RunnerStateRecord)] {
        let individualId = individual.rowId
        return try await store.enrolments(individualId: individualId)
    }

    /// Stored positions in time order, for replay (public: runner ids and display names only).
    package func replay(
        of runId: UUID, runner: UUID?, from: Date?, to: Date?, after: (timeMs: Int64, runnerId: UUID)?, limit: Int
    ) async throws -> [(runnerId: UUID, position: RunPositionRecord)] {
        guard let event = try await events.event(publicId: runId) else { throw RunEventError.notFound }
        return try await store.positions(
            runId: event.id, runnerId: runner, fromMs: from?.epochMilliseconds, toMs: to?.epochMilliseconds, after: after, limit: limit
        )
    }

    /// Applies a participant's batch (any order; late fixes are kept for replay but never move
    /// the live state back).
    package func record(_ fixes: [PositionFix], in runId: UUID, by individual: IndividualID) async throws -> PositionBatchResult {
        let individualId = individual.rowId
        guard !fixes.isEmpty, fixes.count <= Self.maximumBatch else {
            throw RunEventError.invalid(field: "positions", reason: "must hold 1 to \(Self.maximumBatch) positions")
        }
        var dropped = PositionBatchResult.Dropped()
        var announced: RunnerStateRecord?
        var lengthAndStart: (Double, Date) = (0, Date())
        do {
            let known = courses.known(runId)
            let (write, stored) = try await store.apply(publicId: runId, individualId: individualId, knownCourse: known?.version) {
                event, current, now, courseVersion in
                dropped = PositionBatchResult.Dropped()  // a post that met another of the same runner's is decided again
                guard event.cancelledAt == nil, event.startsAt <= now, now <= event.endsAt else {
                    throw RunEventError.invalid(
                        field: "positions", reason: "the event is not under way (positions are taken from its start to its end)")
                }
                let projection = try courses.projection(for: event, version: courseVersion, known: known)
                lengthAndStart = (event.lengthMeters, event.startsAt)
                var state = current
                var positions: [RunPositionRecord] = []
                for fix in fixes.sorted(by: { $0.time < $1.time }) {
                    let point = GeoPoint(latitude: fix.latitude, longitude: fix.longitude)
                    // Outside the event, or further ahead of the server's clock than a phone's clock drifts.
                    if fix.time < event.startsAt || fix.time > event.endsAt || fix.time > now.addingTimeInterval(60) {
                        dropped.outsideRun += 1
                        continue
                    }
                    if let accuracy = fix.accuracy, accuracy > Self.maximumAccuracy { dropped.inaccurate += 1; continue }
                    if let last = state.lastFixAt, fix.time <= last {
                        if fix.time == last || positions.contains(where: { $0.timeMs == fix.time.epochMilliseconds }) {
                            dropped.duplicate += 1; continue
                        }
                        // A late fix: kept for replay where it belongs, the live state stays.
                        let late = projection.project(point, after: nil, reach: nil)
                        positions.append(Self.record(fix, along: min(late.distanceMeters, state.distanceMeters), offset: late.offsetMeters))
                        continue
                    }
                    var reach: Double?
                    if let last = state.lastFixAt, let latitude = state.latitude, let longitude = state.longitude {
                        let seconds = fix.time.timeIntervalSince(last)
                        let metres = GeoPoint(latitude: latitude, longitude: longitude).distance(to: point)
                        if metres / seconds > Self.maximumSpeed { dropped.implausible += 1; continue }
                        reach = Self.maximumSpeed * seconds + (fix.accuracy ?? 20) + 20
                    }
                    let position = projection.project(point, after: state.lastFixAt == nil ? nil : state.distanceMeters, reach: reach)
                    positions.append(Self.record(fix, along: position.distanceMeters, offset: position.offsetMeters))
                    state.lastFixAt = fix.time
                    state.latitude = fix.latitude
                    state.longitude = fix.longitude
                    state.firstFixAt = state.firstFixAt ?? fix.time
                    if state.finishedAt == nil {
                        state.distanceMeters = position.distanceMeters
                        state.offCourse = position.offsetMeters > CourseProjection.offCourseMeters
                        if position.distanceMeters >= event.lengthMeters - CourseProjection.finishToleranceMeters {
                            state.finishedAt = fix.time
                            state.distanceMeters = event.lengthMeters
                        }
                    }
                }
                announced = state == current ? nil : state
                let announcement = announced.map { LiveAnnouncement(runId: runId, state: $0).payload }
                var finished: NewWorkout?
                if current.finishedAt == nil, let end = state.finishedAt {
                    finished = Self.workout(of: runId, event: event, from: state.firstFixAt ?? event.startsAt, to: end)
                }
                return RunPositionWrite(
                    positions: positions, state: state, dropped: dropped.total, announcement: announcement, finishedWorkout: finished)
            }
            dropped.duplicate += write.positions.count - stored
            let state = RunnerState(write.state, startsAt: lengthAndStart.1, lengthMeters: lengthAndStart.0)
            return PositionBatchResult(accepted: stored, dropped: dropped, state: state)
        } catch RunRefusal.notEnrolled {
            throw RunEventError.notParticipant
        } catch let refusal as RunRefusal {
            throw RunEventError.refused(refusal)
        }
    }

    /// A finished run as the runner's workout: a run over the course's length from their first fix
    /// to the finish, recorded by Track4Run; one per runner and event (its client id).
    static func workout(of runId: UUID, event: RunEventRecord, from start: Date, to end: Date) -> NewWorkout {
        var workout = NewWorkout(clientId: "track4run:\(runId.uuidString.lowercased())", activity: "running", start: min(start, end), end: end)
        workout.distanceMetres = event.lengthMeters
        workout.source = "Track4Run"
        return workout
    }

    private static func record(_ fix: PositionFix, along: Double, offset: Double) -> RunPositionRecord {
        RunPositionRecord(
            timeMs: fix.time.epochMilliseconds, latitude: fix.latitude, longitude: fix.longitude, accuracy: fix.accuracy.map(Float.init),
            distanceMeters: along, offsetMeters: Float(offset)
        )
    }
}

/// Parsed courses by event (its public id), kept while the event is unchanged: a post names the
/// version it holds, and the course comes from the database only when that is not current.
final class CourseCache: Sendable {
    typealias Entry = (version: Int64, projection: CourseProjection)
    private let entries = Mutex<[UUID: Entry]>([:])

    /// The course held for the event, to name in the post's statement and pass back below.
    func known(_ publicId: UUID) -> Entry? {
        entries.withLock { $0[publicId] }
    }

    /// The event's course at `version`: `known`'s if that is the version (the event's `path` is
    /// then empty), else parsed from the path and kept.
    func projection(for event: RunEventRecord, version: Int64, known: Entry?) throws -> CourseProjection {
        if let known, known.version == version { return known.projection }
        let coordinates = try JSONDecoder().decode([[Double]].self, from: Data(event.path.utf8))
        let projection = CourseProjection(path: try GeoPath(coordinates: coordinates))
        entries.withLock { entries in
            if entries.count > 1_000 { entries.removeAll() }
            entries[event.publicId] = (version, projection)
        }
        return projection
    }
}
