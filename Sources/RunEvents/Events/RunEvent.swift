import Data4HelpCore
import DatabaseLink
import Foundation

/// What went wrong with a run event or an enrolment: a value that is not valid, positions from
/// someone not running, or one of the store's refusals (not found, cancelled, started, full, …).
package enum RunEventError: Error, Equatable {
    case invalid(field: String, reason: String)
    /// Positions from someone not running in the event.
    case notParticipant
    case refused(RunRefusal)

    package static let notFound = RunEventError.refused(.notFound)
}

/// An event as the organiser sets it, valid as a whole: a course of at least two points, a
/// start in the future and before the end, an enrolment deadline no later than the start.
package struct RunEventPlan: Sendable, Equatable {
    package static let maximumParticipants = 10_000
    package static let maximumDuration: TimeInterval = 7 * 86_400

    package var name: String
    package var description: String
    package var startsAt: Date
    package var endsAt: Date
    package var enrolmentDeadline: Date
    package var maxParticipants: Int
    package var path: GeoPath

    package init(
        name: String, description: String, startsAt: Date, endsAt: Date, enrolmentDeadline: Date, maxParticipants: Int, path: GeoPath,
        now: Date = Date()
    ) throws(RunEventError) {
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...200).contains(trimmed.count) else { throw .invalid(field: "name", reason: "must be 1 to 200 characters") }
        guard description.count <= 5_000 else { throw .invalid(field: "description", reason: "may be at most 5000 characters") }
        guard startsAt > now else { throw .invalid(field: "startsAt", reason: "must be in the future") }
        guard endsAt > startsAt else { throw .invalid(field: "endsAt", reason: "must be after startsAt") }
        guard endsAt.timeIntervalSince(startsAt) <= Self.maximumDuration else {
            throw .invalid(field: "endsAt", reason: "an event may last at most 7 days")
        }
        guard enrolmentDeadline <= startsAt else { throw .invalid(field: "enrolmentDeadline", reason: "must not be after startsAt") }
        guard (1...Self.maximumParticipants).contains(maxParticipants) else {
            throw .invalid(field: "maxParticipants", reason: "must be from 1 to \(Self.maximumParticipants)")
        }
        self.name = trimmed
        self.description = description
        self.startsAt = startsAt
        self.endsAt = endsAt
        self.enrolmentDeadline = enrolmentDeadline
        self.maxParticipants = maxParticipants
        self.path = path
    }

    var draft: RunEventDraft {
        get throws {
            RunEventDraft(
                name: name, description: description, startsAt: startsAt, endsAt: endsAt, enrolmentDeadline: enrolmentDeadline,
                maxParticipants: maxParticipants, path: String(decoding: try JSONEncoder().encode(path.coordinates), as: UTF8.self),
                lengthMeters: path.lengthMeters
            )
        }
    }
}

/// A run event as stored, with its phase now.
package struct RunEvent: Sendable {
    package var id: UUID
    package var organiserId: Int64
    package var name: String
    package var description: String
    package var startsAt: Date
    package var endsAt: Date
    package var enrolmentDeadline: Date
    package var maxParticipants: Int
    package var participantCount: Int
    package var path: GeoPath
    package var createdAt: Date
    package var updatedAt: Date
    package var cancelledAt: Date?
    package var phase: RunPhase
    /// The position in listings (for cursors).
    package var sequence: Int64

    init(_ record: RunEventRecord, now: Date = Date()) throws {
        id = record.publicId
        organiserId = record.organiserId
        name = record.name
        description = record.description
        startsAt = record.startsAt
        endsAt = record.endsAt
        enrolmentDeadline = record.enrolmentDeadline
        maxParticipants = record.maxParticipants
        participantCount = record.participantCount
        path = try GeoPath(coordinates: try JSONDecoder().decode([[Double]].self, from: Data(record.path.utf8)))
        createdAt = record.createdAt
        updatedAt = record.updatedAt
        cancelledAt = record.cancelledAt
        phase = .upcoming
        sequence = record.id
        phase = phase(at: now)
    }

    /// An event that is not stored (the live view's tests).
    package init(id: UUID, name: String, startsAt: Date, endsAt: Date, path: GeoPath, now: Date = Date()) {
        self.id = id
        organiserId = 0
        self.name = name
        description = ""
        self.startsAt = startsAt
        self.endsAt = endsAt
        enrolmentDeadline = startsAt
        maxParticipants = 0
        participantCount = 0
        self.path = path
        createdAt = startsAt
        updatedAt = startsAt
        phase = .upcoming
        sequence = 0
        phase = phase(at: now)
    }

    /// The phase at `now` (the stored `phase` is the one when the event was read).
    package func phase(at now: Date) -> RunPhase {
        RunPhase.of(cancelledAt: cancelledAt, startsAt: startsAt, endsAt: endsAt, at: now)
    }

    /// The event as it stands, as a plan to change (validation is redone on the merged result).
    package var plan: (name: String, description: String, startsAt: Date, endsAt: Date, enrolmentDeadline: Date, maxParticipants: Int, path: GeoPath)
    {
        (name, description, startsAt, endsAt, enrolmentDeadline, maxParticipants, path)
    }
}
