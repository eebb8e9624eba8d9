import AccessManager
import Crypto
import Data4HelpCore
import DatabaseLink
import Foundation

/// An individual's incidents (list, cancel) and the dispatch centre's reports on them.
package struct SOSIncidentService: Sendable {
    let store: SOSIncidentStore

    package init(database: Database) {
        self.store = SOSIncidentStore(database: database)
    }

    /// Newest first; pass the last item's `sequence` as `before` for the next page.
    package func incidents(of individual: IndividualID, before: Int64?, limit: Int) async throws -> [SOSIncident] {
        try await store.incidents(individualId: individual.rowId, beforeId: before, limit: limit).map(SOSIncident.init)
    }

    package func incident(_ id: UUID, of individual: IndividualID) async throws -> SOSIncident {
        guard let record = try await store.incident(publicId: id, individualId: individual.rowId) else { throw SOSError.incidentNotFound }
        return try SOSIncident(record)
    }

    /// "It's not an emergency": the dispatch stops if no call has gone out yet; otherwise the
    /// cancellation is recorded and the dispatch centre decides (the ambulance is not recalled).
    package func cancel(_ id: UUID, by individual: IndividualID) async throws -> SOSIncident {
        guard let record = try await store.cancel(publicId: id, individualId: individual.rowId) else { throw SOSError.incidentNotFound }
        return try SOSIncident(record)
    }

    /// The dispatch centre's acknowledgement or resolution (already authenticated by the caller,
    /// whose verified `signature` is accepted once: a replay is refused).
    package func record(_ report: DispatchCentreReport, on id: UUID, reference: String?, signature: String) async throws -> SOSIncident {
        let digest = SHA256.hash(data: Data(signature.utf8)).map { String(format: "%02x", $0) }.joined()
        guard try await store.firstUse(ofReportSignature: digest) else { throw SOSError.replayedReport }
        switch try await store.record(report, publicId: id, reference: reference) {
        case nil: throw SOSError.incidentNotFound
        case .failure(.notDispatched): throw SOSError.reportConflict("no dispatch was made for this incident")
        case .failure(.alreadyResolved): throw SOSError.reportConflict("the incident is already resolved")
        case .success(let record): return try SOSIncident(record)
        }
    }
}
