import DatabaseLink

/// A rule that must commit or fail with the samples that trigger it (AutomatedSOS detection):
/// the Data Manager runs every registered check inside the upload's transaction, after the new
/// samples were written and before it commits. Throwing rolls the whole upload back (the client
/// is told to retry).
package protocol IngestTransactionCheck: Sendable {
    func samplesStored(_ readings: [StoredReading], in transaction: IngestTransaction) async throws
}
