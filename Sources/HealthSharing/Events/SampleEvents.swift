import Foundation
import Synchronization

/// Data newly stored by one upload, announced once, after its transaction committed.
///
/// Samples and fixes appear here only the first time they are stored: a re-sent batch yields an
/// empty announcement. AutomatedSOS and third-party subscriptions consume these.
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
