/// Why a change to a run event or an enrolment was refused. The rules are `RunEvents`'
/// (`RunEventRules`), decided with the event's row locked; DatabaseLink only reports what it
/// cannot find (`notFound`, `notEnrolled`, `alreadyEnrolled`).
package enum RunRefusal: Error, Sendable, Equatable {
    case notFound
    case cancelled
    /// The event has started: it can no longer be changed.
    case started
    /// The event is over: it can no longer be cancelled.
    case ended
    case deadlinePassed
    case full
    case alreadyEnrolled
    case notEnrolled
    /// A change would leave fewer places than runners already enrolled.
    case capacityBelowEnrolled(Int)
}
