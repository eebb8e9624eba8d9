import Data4HelpCore
import Foundation
import Logging
import PostgresNIO

/// A sample an ingest stored for the first time, as the checks inside the ingest transaction see it.
package struct StoredReading: Sendable, Equatable {
    /// `SampleType.storageCode`.
    package let typeCode: Int16
    package let timeMs: Int64
    package let value: Float
    package let key: Int64

    package init(typeCode: Int16, timeMs: Int64, value: Float, key: Int64) {
        self.typeCode = typeCode
        self.timeMs = timeMs
        self.value = value
        self.key = key
    }
}

/// The ingest transaction of one individual, still open: checks that must commit or fail with
/// the samples (AutomatedSOS detection, HealthSharing's `IngestTransactionCheck`) run their
/// DatabaseLink queries on it. Ingests of one
/// individual are serialised (an advisory lock), so what a check reads cannot change under it.
package struct IngestTransaction: Sendable {
    let connection: LeasedConnection
    let logger: Logger
    package let individualId: Int64
    /// When the upload reached the server.
    package let receivedAt: Date
    /// Location fixes the ingest stored for the first time.
    package var newLocations = 0
    /// The times of those fixes.
    package var newLocationSpan: DataSpan?
}
