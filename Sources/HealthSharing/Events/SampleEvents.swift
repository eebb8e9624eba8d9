import Foundation
import Synchronization

/// Data newly stored by one upload, announced once, after its transaction committed.
///
/// Samples and fixes appear here only the first time they are stored: a re-sent batch yields an
/// empty announcement. Nothing in the server listens yet: rules that must commit with the data
/// (AutomatedSOS) are `IngestTransactionCheck`s, and organisations hear of new data through the
/// party events the ingest statement writes. This is the hook for work that may follow the
/// commit (watch rules that only notify, issue 22); `DataManagerTests` pins what it announces.
package struct StoredDataBatch: Sendable, Equatable {
    package let individualId: Int64
    package let samples: [NewSample]
    package let locations: [NewLocationFix]
}

/// Something that wants to know about newly stored data. Implementations must return quickly
/// (hand the work to their own queue): the upload's response waits for them.
package protocol StoredDataObserver: Sendable {
    func dataStored(_ batch: StoredDataBatch) async
}

/// The one place newly stored data is announced from; observers register at start-up.
package final class StoredDataEvents: Sendable {
    private let observers = Mutex<[any StoredDataObserver]>([])

    package init() {}

    package func register(_ observer: any StoredDataObserver) {
        observers.withLock { $0.append(observer) }
    }

    func announce(_ batch: StoredDataBatch) async {
        guard !batch.samples.isEmpty || !batch.locations.isEmpty else { return }
        for observer in observers.withLock({ $0 }) {
            await observer.dataStored(batch)
        }
    }
}
