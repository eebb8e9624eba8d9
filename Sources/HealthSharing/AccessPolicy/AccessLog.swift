import AccessManager
import Data4HelpCore
import DatabaseLink

/// The individual's view of every disclosure of their data (transparency).
package struct AccessLog: Sendable {
    let store: DisclosureStore

    package init(database: Database) {
        self.store = DisclosureStore(database: database)
    }

    /// The caller's disclosures, newest first.
    package func entries(for individual: IndividualID, beforeId: Int64?, limit: Int) async throws -> [DisclosureRecord] {
        let id = individual.rowId
        return try await store.list(individualId: id, beforeId: beforeId, limit: limit)
    }
}
