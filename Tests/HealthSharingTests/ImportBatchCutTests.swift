import Data4HelpCore
import Foundation
import Testing

@testable import DatabaseLink
@testable import HealthSharing

/// A full batch of an import is cut just before a sample that starts another block (another
/// type, or another UTC hour), so that the next batch has no hour to merge with this one's; the
/// sample held back is counted with the batch that stores it.
@Suite("Import batches cut where an hour ends")
struct ImportBatchCutTests {
    static let claim = ClaimedImport(
        id: 1, publicId: UUID(), individualId: 1, format: .appleHealthXML, attempt: 1, tries: 1, uploading: false, checkpoint: nil,
        figures: "{}", bytesProcessed: 0, records: 0, bytesReceived: 0)

    static func sample(_ type: String, at start: String) -> ImportedItem {
        var raw = RawIngestItem()
        raw.type = RawSampleType(type)
        raw.start = RawInstant(start)
        return .sample(raw)
    }

    static func batch(_ items: ImportedItem...) -> ImportBatch {
        var batch = ImportBatch(claim: claim)
        for item in items { batch.add(item) }
        return batch
    }

    @Test func aSampleOfAnotherUTCHourOrTypeStartsABlock() {
        #expect(!Self.batch(Self.sample("heartRate", at: "2025-03-01T08:59:59Z")).lastSampleStartsABlock)  // nothing before it
        #expect(
            Self.batch(Self.sample("heartRate", at: "2025-03-01T08:59:59Z"), Self.sample("heartRate", at: "2025-03-01T09:00:00Z"))
                .lastSampleStartsABlock)
        // The same UTC hour written in two offsets.
        #expect(
            !Self.batch(Self.sample("heartRate", at: "2025-03-01T08:59:59Z"), Self.sample("heartRate", at: "2025-03-01T09:10:00+01:00"))
                .lastSampleStartsABlock)
        // A half-hour zone: 09:40+05:30 is 04:10Z, another hour than 03:50Z.
        #expect(
            Self.batch(Self.sample("heartRate", at: "2025-03-01T03:50:00Z"), Self.sample("heartRate", at: "2025-03-01T09:40:00+05:30"))
                .lastSampleStartsABlock)
        #expect(
            Self.batch(Self.sample("heartRate", at: "2025-03-01T08:10:00Z"), Self.sample("stepCount", at: "2025-03-01T08:10:00Z"))
                .lastSampleStartsABlock)
    }

    @Test func aSampleHeldBackIsCountedOnceWhenAddedAgain() {
        var batch = Self.batch(
            .skipped(type: "HKQuantityTypeIdentifierFlightsClimbed"), Self.sample("heartRate", at: "2025-03-01T08:59:59Z"),
            Self.sample("heartRate", at: "2025-03-01T09:00:00Z"))
        #expect(batch.records == 3 && batch.samples.count == 2)
        let next = batch.holdBackLastSample()
        #expect(next.start == "2025-03-01T09:00:00Z")
        #expect(batch.records == 2 && batch.samples.map(\.start) == ["2025-03-01T08:59:59Z"])
        batch.add(.sample(next))
        #expect(batch.records == 3 && batch.samples.count == 2)
    }

    @Test func aFullBatchSearchesForAnHoursEndOnlySoFar() {
        var settings = ImportSettings()
        settings.batchRecords = 3
        settings.batchRecordsWhileOthersUpload = 2
        settings.cutSearchRecords = 2
        var batch = ImportBatch(claim: Self.claim)
        for second in 0..<3 { batch.add(Self.sample("heartRate", at: "2025-03-01T08:00:0\(second)Z")) }
        #expect(batch.isFull(settings, othersUploading: true) && !batch.isOverfull(settings, othersUploading: true))
        #expect(batch.isFull(settings, othersUploading: false) && !batch.isOverfull(settings, othersUploading: false))
        batch.add(Self.sample("heartRate", at: "2025-03-01T08:00:03Z"))
        #expect(batch.isOverfull(settings, othersUploading: false) == false && batch.isOverfull(settings, othersUploading: true))
    }
}
