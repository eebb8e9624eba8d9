import Data4HelpCore
import DatabaseLink
import Foundation

/// A runner as spectators see them at one moment.
package struct RunnerState: Sendable, Equatable, Codable {
    package var runnerId: UUID
    package var displayName: String
    package var latitude: Double?
    package var longitude: Double?
    /// The time of the fix the state comes from.
    package var time: Date?
    /// Along the course; never decreases.
    package var distanceMeters: Double
    /// 0…1 of the course.
    package var progress: Double
    /// Average since the start, once the runner has covered 50 m.
    package var paceSecondsPerKm: Double?
    package var estimatedFinish: Date?
    /// 1 for the leader; finished runners by finishing time first, then by distance.
    package var rank: Int?
    package var offCourse: Bool
    package var finished: Bool
    package var finishedAt: Date?

    init(_ record: RunnerStateRecord, startsAt: Date, lengthMeters: Double) {
        runnerId = record.runnerId
        displayName = record.displayName
        latitude = record.latitude
        longitude = record.longitude
        time = record.lastFixAt
        distanceMeters = (record.distanceMeters * 10).rounded() / 10
        progress = lengthMeters > 0 ? min(1, record.distanceMeters / lengthMeters) : 0
        offCourse = record.offCourse
        finished = record.finishedAt != nil
        finishedAt = record.finishedAt
        if let time = record.finishedAt ?? record.lastFixAt, record.distanceMeters >= 50 {
            let pace = max(0, time.timeIntervalSince(startsAt)) / (record.distanceMeters / 1000)
            paceSecondsPerKm = pace.rounded()
            estimatedFinish = record.finishedAt ?? time.addingTimeInterval(pace * max(0, lengthMeters - record.distanceMeters) / 1000)
        }
    }

    /// How long a silent runner is carried forward at their pace when ranking.
    package static let rankingCarry: TimeInterval = 30

    /// Ranks runners: finished ones by finishing time; the others by where they are estimated to
    /// be at the newest fix among them, each carried forward from their own last fix at their
    /// average pace (for at most `rankingCarry`). Comparing raw distances would compare fixes
    /// taken at different moments: two runners side by side would swap places every time one of
    /// them reports, and every swap would be sent to every spectator.
    package static func ranked(_ states: [RunnerState], startsAt: Date) -> [RunnerState] {
        let newest = newestFix(of: states)
        let ordered = states.map { (state: $0, standing: $0.standing(at: newest, startsAt: startsAt)) }.sorted { a, b in
            ranksAhead(a.state, a.standing, of: b.state, b.standing)
        }
        return ordered.enumerated().map { index, entry in
            var state = entry.state
            state.rank = index + 1
            return state
        }
    }

    /// The newest fix among the runners still running (what `standing` carries the others to).
    static func newestFix(of states: some Sequence<RunnerState>) -> Date? {
        states.lazy.filter { !$0.finished }.compactMap(\.time).max()
    }

    /// Where the runner is estimated to be at `newest` (see `ranked`), in metres.
    func standing(at newest: Date?, startsAt: Date) -> Double {
        guard let newest, let time, case let elapsed = time.timeIntervalSince(startsAt), elapsed > 0 else { return distanceMeters }
        return distanceMeters * (1 + min(newest.timeIntervalSince(time), Self.rankingCarry) / elapsed)
    }

    /// Whether `a` (standing at `aStanding`) ranks ahead of `b` (see `RankKey`).
    static func ranksAhead(_ a: RunnerState, _ aStanding: Double, of b: RunnerState, _ bStanding: Double) -> Bool {
        RankKey(a, standing: aStanding).ranksAhead(of: RankKey(b, standing: bStanding))
    }
}

/// What ranking compares of a runner, apart from the state: a board's sort compares thousands of
/// pairs at every batch, and reading them out of `RunnerState` copied its strings each time.
struct RankKey {
    let finishedAt: Date?
    let standing: Double
    let runnerId: UUID

    init(_ state: RunnerState, standing: Double) {
        finishedAt = state.finishedAt
        self.standing = standing
        runnerId = state.runnerId
    }

    /// Finished runners first, by finishing time; the others by standing; ties by runner id.
    func ranksAhead(of other: RankKey) -> Bool {
        switch (finishedAt, other.finishedAt) {
        case let (x?, y?): x != y ? x < y : runnerId < other.runnerId
        case (.some, nil): true
        case (nil, .some): false
        case (nil, nil): standing != other.standing ? standing > other.standing : runnerId < other.runnerId
        }
    }
}
