import Data4HelpCore
import DatabaseLink
import Foundation

/// The Event Handler's rules, decided on the event as locked by `RunEventStore` (the unit of
/// work: the store locks and reads, these decide, the store writes — one transaction), at the
/// database's clock.
enum RunEventRules {
    /// An organiser changes an event until it starts (checked before the change is validated)…
    static func checkEditable(_ locked: LockedRunEvent) throws(RunRefusal) {
        try checkNotCancelled(locked)
        guard locked.now < locked.event.startsAt else { throw .started }
    }

    /// …and never leaves fewer places than the runners already enrolled.
    static func checkCapacity(_ locked: LockedRunEvent, for draft: RunEventDraft) throws(RunRefusal) {
        guard draft.maxParticipants >= locked.event.participantCount else { throw .capacityBelowEnrolled(locked.event.participantCount) }
    }

    /// An organiser cancels an event until it ends; cancelling twice changes nothing (false).
    static func mayCancel(_ locked: LockedRunEvent) throws(RunRefusal) -> Bool {
        if locked.event.cancelledAt != nil { return false }
        guard locked.now < locked.event.endsAt else { throw .ended }
        return true
    }

    /// An individual enrols once, before the deadline, while places remain.
    static func checkEnrolment(_ locked: LockedRunEvent) throws(RunRefusal) {
        try checkNotCancelled(locked)
        guard locked.now < locked.event.enrolmentDeadline else { throw .deadlinePassed }
        guard !locked.askerEnrolled else { throw .alreadyEnrolled }
        guard locked.event.participantCount < locked.event.maxParticipants else { throw .full }
    }

    /// A runner withdraws before the deadline.
    static func checkWithdrawal(_ locked: LockedRunEvent) throws(RunRefusal) {
        guard locked.now < locked.event.enrolmentDeadline else { throw .deadlinePassed }
        guard locked.askerEnrolled else { throw .notEnrolled }
    }

    private static func checkNotCancelled(_ locked: LockedRunEvent) throws(RunRefusal) {
        guard locked.event.cancelledAt == nil else { throw .cancelled }
    }
}

extension RunPhase {
    /// The phase of an event at `now`: the one definition, used for what is shown and, through
    /// `window(at:)`, for what the public listing selects.
    static func of(cancelledAt: Date?, startsAt: Date, endsAt: Date, at now: Date) -> RunPhase {
        cancelledAt != nil ? .cancelled : now < startsAt ? .upcoming : now <= endsAt ? .live : .finished
    }

    /// The stored events in this phase at `now`, as bounds on their times.
    func window(at now: Date) -> RunEventWindow {
        switch self {
        case .upcoming: RunEventWindow(cancelled: false, startsAfter: now)
        case .live: RunEventWindow(cancelled: false, startsNoLaterThan: now, endsNoEarlierThan: now)
        case .finished: RunEventWindow(cancelled: false, endsBefore: now)
        case .cancelled: RunEventWindow(cancelled: true)
        }
    }
}
