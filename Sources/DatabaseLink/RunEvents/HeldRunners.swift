import Data4HelpCore
import Foundation
import Synchronization

/// Runners' rows as this instance last wrote them, with their event, so that a runner's next post
/// here is decided without reading them again (`RunPositionStore.apply`): the write then checks
/// that the runner's row is still the version written and the event's row the version read (each
/// row's `xmin`, which any change of the row moves). A post whose runner was written meanwhile by another instance, withdrawn, or whose
/// event changed, finds its write refused and is read and decided afresh — what is held is
/// never the last word, only a guess the write confirms.
///
/// Each event is held once (without its course: the caller holds that parsed, by version), with
/// the difference between the database's clock and this instance's (`ClockOffset`), so that a
/// post decided here sees the database's time as a read would have given it.
final class HeldRunners: Sendable {
    struct Key: Hashable {
        var publicId: UUID
        var individualId: Int64
    }

    /// What a post decides from: the event (its `path` empty), the runner's state and row
    /// version, the database's time (estimated) and the course version.
    struct Held {
        var event: RunEventRecord
        var eventVersion: String
        var state: RunnerStateRecord
        var version: String
        var now: Date
        var courseVersion: Int64
    }

    private struct Runner {
        var state: RunnerStateRecord
        var version: String
        var eventVersion: String
    }

    private struct Event {
        var record: RunEventRecord
        var version: String
        var courseVersion: Int64
        var clock: ClockOffset
    }

    /// The database's clock less this instance's, from reads: a read's `now()` was taken between
    /// its statement's sending and its answer, so the midpoint is off by at most half the round
    /// trip. The estimate with the least doubt is kept — its doubt grown by an allowed drift as
    /// it ages — so one read that waited seconds on a busy machine does not set the clock.
    struct ClockOffset {
        var offset: TimeInterval
        var doubt: TimeInterval
        var measuredAt: Date

        /// How fast an estimate's doubt grows with age: a millisecond a second, far beyond any
        /// clock's drift, so that a stepped clock is followed within a minute or so of reads.
        static let drift = 0.001

        init(databaseNow: Date, sentAt: Date, answeredAt: Date) {
            let roundTrip = max(0, answeredAt.timeIntervalSince(sentAt))
            offset = databaseNow.timeIntervalSince(sentAt) - roundTrip / 2
            doubt = roundTrip / 2
            measuredAt = answeredAt
        }

        func doubt(at date: Date) -> TimeInterval {
            doubt + max(0, date.timeIntervalSince(measuredAt)) * Self.drift
        }

        /// This estimate or `other`, whichever is less in doubt at `other`'s measuring.
        func better(_ other: ClockOffset) -> ClockOffset {
            doubt(at: other.measuredAt) < other.doubt ? self : other
        }
    }

    /// At most this many runners are held (all are let go when a new one would pass it: a runner
    /// not held costs its post one read, as before anything was held). About 300 bytes each.
    static let capacity = 50_000

    private let table = Mutex<(events: [UUID: Event], runners: [Key: Runner])>(([:], [:]))

    /// The runner's held row and event, when the runner was decided on the event's version held,
    /// and that has the course version the caller holds parsed (`knownCourse`); nil otherwise.
    func runner(_ key: Key, knownCourse: Int64?) -> Held? {
        guard let knownCourse else { return nil }
        return table.withLock { table in
            guard let runner = table.runners[key], let event = table.events[key.publicId], event.version == runner.eventVersion,
                event.courseVersion == knownCourse
            else { return nil }
            return Held(
                event: event.record, eventVersion: event.version, state: runner.state, version: runner.version,
                now: Date().addingTimeInterval(event.clock.offset), courseVersion: knownCourse)
        }
    }

    /// Holds what a read and the write after it left: the event as read (its row at
    /// `eventVersion`, its course at `courseVersion`, the clock offset the read gave) and the
    /// runner's row as written. The event read last is the one held: runners decided on another
    /// version of it are not held until their next read.
    func keep(
        _ key: Key, event: RunEventRecord, eventVersion: String, courseVersion: Int64, clock: ClockOffset,
        state: RunnerStateRecord, version: String
    ) {
        var record = event
        record.path = ""
        table.withLock { table in
            if table.runners[key] == nil, table.runners.count >= Self.capacity {
                table.runners.removeAll()
                table.events.removeAll()
            }
            let clock = table.events[key.publicId]?.clock.better(clock) ?? clock
            table.events[key.publicId] = Event(record: record, version: eventVersion, courseVersion: courseVersion, clock: clock)
            table.runners[key] = Runner(state: state, version: version, eventVersion: eventVersion)
        }
    }

    /// The runner's row as a write from what was held left it.
    func update(_ key: Key, state: RunnerStateRecord, version: String) {
        table.withLock { table in
            table.runners[key]?.state = state
            table.runners[key]?.version = version
        }
    }

    /// Lets the runner go: their next post here reads.
    func forget(_ key: Key) {
        _ = table.withLock { $0.runners.removeValue(forKey: key) }
    }
}
