/// How an individual takes part in a run event: which of their events to list.
package enum RunRole: String, Sendable {
    case organiser, participant
}
