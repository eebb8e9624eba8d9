import Foundation

/// A device that produced some of an individual's samples ("Anna’s Apple Watch", "iPhone"), and
/// where it stands in the individual's preference: where two sources cover the same minute of a
/// type, summaries, charts and aggregates count the preferred one (migration 0029).
package struct SampleSource: Sendable, Equatable {
    /// Its number among the individual's sources (1, 2, …).
    package var id: Int16
    package var name: String
    /// Lower is preferred: 1… when the individual ordered it, else 100 (worn devices), 200
    /// (phones) or 300 (anything else) from its name.
    package var priority: Int16
    package var orderedByIndividual: Bool

    package init(id: Int16, name: String, priority: Int16, orderedByIndividual: Bool) {
        self.id = id
        self.name = name
        self.priority = priority
        self.orderedByIndividual = orderedByIndividual
    }
}
