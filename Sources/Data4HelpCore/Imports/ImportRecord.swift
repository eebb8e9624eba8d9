import Foundation

/// An import as its owner sees it: the row of `imports`, read by the Data Manager and shown by
/// the HTTP layer (`id` is the row's; `publicId` the one on the wire).
package struct ImportRecord: Sendable, Equatable {
    package let id: Int64
    package let publicId: UUID
    package let format: ImportFormat
    package let state: ImportState
    package let createdAt: Date
    package let uploadedAt: Date?
    package let startedAt: Date?
    package let finishedAt: Date?
    package let bytesReceived: Int64
    package let bytesProcessed: Int64
    package let records: Int64
    /// What the commits so far stored (JSON of HealthSharing's `ImportFigures`; its `result`).
    package let figures: String
    package let failure: String?

    package init(
        id: Int64, publicId: UUID, format: ImportFormat, state: ImportState, createdAt: Date, uploadedAt: Date?, startedAt: Date?,
        finishedAt: Date?, bytesReceived: Int64, bytesProcessed: Int64, records: Int64, figures: String, failure: String?
    ) {
        self.id = id
        self.publicId = publicId
        self.format = format
        self.state = state
        self.createdAt = createdAt
        self.uploadedAt = uploadedAt
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.bytesReceived = bytesReceived
        self.bytesProcessed = bytesProcessed
        self.records = records
        self.figures = figures
        self.failure = failure
    }
}
