import Data4HelpCore
import Foundation

/// One runner's new state, as announced between instances (`NOTIFY data4help_runs`).
///
/// Every accepted post sends one, and every instance decodes it: at a city race that is a
/// thousand a second, each through Foundation's `JSONEncoder` once and `JSONDecoder` once per
/// instance while it was JSON. The payload is now one line of fields separated by `|`, written
/// and read without a generic coder:
///
///     r1|runId|runnerId|lastFixAt|firstFixAt|latitude|longitude|distanceMeters|offCourse|finishedAt|displayName
///
/// Times are `Date`'s own seconds since 2001 and numbers Swift's shortest round-trip form, so a
/// state reads back exactly (milliseconds since 1970, as the JSON had them, did not: a stored
/// time has microseconds); an empty field is nil, `offCourse` is 0 or 1, and the display name comes last
/// (it may hold `|`). The JSON object of earlier releases is still read, for instances of both
/// versions side by side during a rolling upgrade.
package struct LiveAnnouncement: Equatable {
    package var runId: UUID
    /// The runner's state (dropped fixes are not announced: always 0).
    package var state: RunnerStateRecord

    package init(runId: UUID, state: RunnerStateRecord) {
        self.runId = runId
        self.state = state
        self.state.droppedFixes = 0
    }

    private static let tag = "r1"
    private static let fieldCount = 11

    /// The payload (well under PostgreSQL's 8,000 bytes: a display name is at most 40 characters).
    package var payload: String {
        func time(_ date: Date?) -> String { date.map { $0.timeIntervalSinceReferenceDate.description } ?? "" }
        func number(_ value: Double?) -> String { value.map { $0.description } ?? "" }
        return [
            Self.tag, runId.uuidString, state.runnerId.uuidString, time(state.lastFixAt), time(state.firstFixAt), number(state.latitude),
            number(state.longitude), state.distanceMeters.description, state.offCourse ? "1" : "0", time(state.finishedAt), state.displayName,
        ].joined(separator: "|")
    }

    /// Reads `payload`'s line; nil for anything else (a field out of place, a number that is not
    /// finite, a time out of range).
    package init?(payload: String) {
        let fields = payload.split(separator: "|", maxSplits: Self.fieldCount - 1, omittingEmptySubsequences: false)
        guard fields.count == Self.fieldCount, fields[0] == Self.tag, let runId = UUID(uuidString: String(fields[1])),
            let runnerId = UUID(uuidString: String(fields[2])), let lastFixAt = Self.time(fields[3]), let firstFixAt = Self.time(fields[4]),
            let latitude = Self.number(fields[5]), let longitude = Self.number(fields[6]), let distance = Self.number(fields[7]),
            let distanceMeters = distance, fields[8] == "0" || fields[8] == "1", let finishedAt = Self.time(fields[9])
        else { return nil }
        self.init(
            runId: runId,
            state: RunnerStateRecord(
                runnerId: runnerId, displayName: String(fields[10]), lastFixAt: lastFixAt, latitude: latitude, longitude: longitude,
                distanceMeters: distanceMeters, firstFixAt: firstFixAt, offCourse: fields[8] == "1", finishedAt: finishedAt, droppedFixes: 0))
    }

    /// An optional time: nil inside for an empty field, nil outside for one that is not a time.
    private static func time(_ field: Substring) -> Date?? {
        if field.isEmpty { return .some(nil) }
        guard let seconds = Double(field), seconds.isFinite, abs(seconds) < 1e12 else { return nil }
        return .some(Date(timeIntervalSinceReferenceDate: seconds))
    }

    /// An optional finite number, as `time` answers.
    private static func number(_ field: Substring) -> Double?? {
        if field.isEmpty { return .some(nil) }
        guard let value = Double(field), value.isFinite else { return nil }
        return .some(value)
    }
}

extension LiveAnnouncement {
    /// The roster's changes (`RunEventChange`) and the JSON of earlier releases go through this
    /// one decoder.
    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return decoder
    }()

    /// A runner's new state, or (nil state) a change of the event or its roster.
    static func decode(_ payload: String) -> (runId: UUID, state: RunnerStateRecord?)? {
        if let announcement = LiveAnnouncement(payload: payload) { return (announcement.runId, announcement.state) }
        let data = Data(payload.utf8)
        if let change = try? decoder.decode(RunEventChange.self, from: data) { return (change.runId, nil) }
        if let earlier = try? decoder.decode(JSONAnnouncement.self, from: data) { return (earlier.runId, earlier.state) }
        return nil
    }

    /// An announcement as earlier releases sent it: a JSON object, times in milliseconds since 1970.
    private struct JSONAnnouncement: Decodable {
        var runId: UUID
        var runnerId: UUID
        var displayName: String
        var latitude: Double?
        var longitude: Double?
        var lastFixAt: Date?
        var firstFixAt: Date?
        var distanceMeters: Double
        var offCourse: Bool
        var finishedAt: Date?

        var state: RunnerStateRecord {
            RunnerStateRecord(
                runnerId: runnerId, displayName: displayName, lastFixAt: lastFixAt, latitude: latitude, longitude: longitude,
                distanceMeters: distanceMeters, firstFixAt: firstFixAt, offCourse: offCourse, finishedAt: finishedAt, droppedFixes: 0
            )
        }
    }

    /// `{ "runId": …, "event": true }`: the event or its roster changed (`RunEventStore`).
    private struct RunEventChange: Decodable {
        var runId: UUID
        var event: Bool
    }
}
