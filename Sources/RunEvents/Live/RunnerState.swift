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

    /// Ranks runners: finished ones by finishing time, then the rest by distance covered.
    package static func ranked(_ states: [RunnerState]) -> [RunnerState] {
        let ordered = states.sorted { a, b in
            switch (a.finishedAt, b.finishedAt) {
            case let (x?, y?): x != y ? x < y : a.runnerId.uuidString < b.runnerId.uuidString
            case (.some, nil): true
            case (nil, .some): false
            case (nil, nil): a.distanceMeters != b.distanceMeters ? a.distanceMeters > b.distanceMeters : a.runnerId.uuidString < b.runnerId.uuidString
            }
        }
        return ordered.enumerated().map { index, state in
            var state = state
            state.rank = index + 1
            return state
        }
    }
}
