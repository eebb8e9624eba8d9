import Data4HelpCore
import DatabaseLink
import Foundation

extension ImportRecord {
    /// What the import has stored so far (empty if the stored figures cannot be read).
    package var result: ImportFigures {
        (try? JSONDecoder().decode(ImportFigures.self, from: Data(figures.utf8))) ?? ImportFigures()
    }
}

/// The Data Manager's imports, as their owner drives them: a file arrives (whole, or in pieces
/// that resume an interrupted upload), is queued for `ImportWorker` (which may already be
/// reading an `export.xml` as it arrives), and can be followed and cancelled. Every operation takes the owner's id: another individual's import is not found.
package struct ImportService: Sendable {
    let store: ImportStore
    /// The largest file accepted (`IMPORT_MAX_BYTES`).
    package let maximumBytes: Int64
    /// How far an upload that a worker may follow gets ahead of its reading before the workers
    /// are woken for it (`ImportSettings.followAhead`).
    let followAhead: Int64

    package init(database: Database, maximumBytes: Int64, followAhead: Int64 = ImportSettings().followAhead) {
        self.store = ImportStore(database: database)
        self.maximumBytes = maximumBytes
        self.followAhead = followAhead
    }

    package func create(for individual: IndividualID, format: ImportFormat) async throws -> ImportRecord {
        try await store.create(individualId: individual.rowId, format: format)
    }

    /// Adds a piece of the file at `offset`; answers the new end.
    package func append(_ id: UUID, for individual: IndividualID, at offset: Int64, bytes: [UInt8]) async throws -> Int64 {
        try await store.append(id, individualId: individual.rowId, at: offset, bytes: bytes, limit: maximumBytes, followAhead: followAhead)
    }

    /// The file is whole: queue it. An empty file fails at once (there is nothing to read).
    package func complete(_ id: UUID, for individual: IndividualID) async throws -> ImportRecord? {
        if let record = try await store.find(id, individualId: individual.rowId), record.state == .uploading, record.bytesReceived == 0 {
            try await store.refuseUpload(id, individualId: individual.rowId, reason: "the file is empty")
            return try await find(id, for: individual)
        }
        return try await store.complete(id, individualId: individual.rowId)
    }

    /// Ends an upload that cannot go on (`reason` for its owner); its bytes are deleted.
    package func refuse(_ id: UUID, for individual: IndividualID, reason: String) async throws {
        try await store.refuseUpload(id, individualId: individual.rowId, reason: reason)
    }

    package func find(_ id: UUID, for individual: IndividualID) async throws -> ImportRecord? {
        try await store.find(id, individualId: individual.rowId)
    }

    /// The individual's latest imports, newest first.
    package func list(for individual: IndividualID, limit: Int = 100) async throws -> [ImportRecord] {
        try await store.list(individualId: individual.rowId, limit: limit)
    }

    package func cancel(_ id: UUID, for individual: IndividualID) async throws -> ImportRecord? {
        try await store.cancel(id, individualId: individual.rowId, announcing: ImportAnnouncer.events)
    }
}
