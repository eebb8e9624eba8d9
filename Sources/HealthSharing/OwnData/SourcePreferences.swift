import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation

/// Which of an individual's devices counts where two measured the same minute (the Data
/// Manager's rule, in migration 0029): the individual's order, else worn devices before phones
/// before anything else. Every sample stays stored and listed with its source; the order decides
/// only what summaries, charts and aggregates count.
package struct SourcePreferences: Sendable {
    let store: SampleSourceStore

    /// The most sources an order may name: the individual's order takes priorities 1…99, below
    /// the defaults (100, 200, 300).
    package static let maximumOrdered = 99

    package init(database: Database) {
        store = SampleSourceStore(database: database)
    }

    /// The individual's sources, most preferred first.
    package func sources(of individual: IndividualID) async throws -> [SampleSource] {
        try await store.sources(individualId: individual.rowId)
    }

    /// Puts `order` first, in that order; the others go back to their default places. The days
    /// that several sources share are counted again before this returns. Refuses, changing
    /// nothing, an order that repeats an id, names more than `maximumOrdered` or an id that is
    /// not one of the individual's sources.
    package func setOrder(_ order: [Int16], for individual: IndividualID) async throws -> Result<[SampleSource], SourceOrderRefusal> {
        guard order.count <= Self.maximumOrdered else { return .failure(.tooMany) }
        var seen = Set<Int16>()
        if let repeated = order.firstIndex(where: { !seen.insert($0).inserted }) { return .failure(.repeated(position: repeated)) }
        return try await store.setOrder(order, individualId: individual.rowId).mapError { .unknown(position: $0.position) }
    }
}

/// Why an order of sources was refused; positions are indexes into the order sent.
package enum SourceOrderRefusal: Error, Sendable, Equatable {
    case tooMany
    case repeated(position: Int)
    case unknown(position: Int)
}
