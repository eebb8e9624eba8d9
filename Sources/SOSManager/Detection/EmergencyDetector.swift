import Data4HelpCore
import DatabaseLink
import Foundation
import HealthSharing
import Logging
import Metrics

/// Runs detection inside every ingest transaction that stored new heart-rate or oxygen
/// saturation readings: an incident is committed together with the reading that completed its
/// run, or not at all. Unenrolled individuals cost one indexed lookup per such upload.
package struct EmergencyDetector: IngestTransactionCheck {
    static let monitored: [SampleType] = [.heartRate, .oxygenSaturation]

    let logger: Logger

    package init(logger: Logger) {
        self.logger = logger
    }

    package func samplesStored(_ readings: [StoredReading], in transaction: IngestTransaction) async throws {
        for type in Self.monitored {
            let new = readings.filter { $0.typeCode == type.storageCode }
            guard let first = new.map(\.timeMs).min(), let last = new.map(\.timeMs).max() else { continue }
            guard let stored = try await SOSDetectionQueries.readings(typeCode: type.storageCode, fromMs: first, toMs: last, in: transaction)
            else { return }  // not enrolled: nothing else to look at
            let rule = AbnormalRunRule(stored)
            for run in rule.emergencies(type: type, new: Set(new.map(\.identity)), receivedAt: transaction.receivedAt) {
                if let incident = try await SOSDetectionQueries.open(
                    run, cancelWindowSeconds: stored.cancelWindowSeconds, locationStaleAfter: AbnormalRunRule.locationStaleAfter, in: transaction,
                    notice: { try SOSDetectedNotice($0).message }
                ) {
                    Counter(label: "sos_incidents_detected_total").increment()
                    logger.notice(
                        "sos incident detected",
                        metadata: [
                            "individual.id": "\(transaction.individualId)", "incident.id": "\(incident.publicId)",
                        ])
                }
            }
        }
    }
}
