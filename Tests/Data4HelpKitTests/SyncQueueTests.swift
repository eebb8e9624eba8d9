import Foundation
import Testing

@testable import Data4HelpKit

/// The sync engine's queue on the disk, opened again as an app that was killed opens it: what
/// was handed over survives, acknowledged items never come back, and what a crash left half
/// done is neither lost nor mistaken for done.
@Suite("Data4HelpKit's on-disk queue")
struct SyncQueueTests {
    static func directory() -> URL {
        URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("kit-queue-unit-\(UUID().uuidString.prefix(8))", isDirectory: true)
    }

    static func items(_ count: Int, from start: Date = Date(timeIntervalSince1970: 1_790_000_000)) -> [SyncItem] {
        (0..<count).map { .sample(.init(type: .heartRate, value: .number(Double(60 + $0 % 30)), start: start.addingTimeInterval(Double($0)))) }
    }

    @Test func itemsAndAnchorsSurviveReopeningAndAcknowledgedItemsDoNotComeBack() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let handed = Self.items(25)
        do {
            let queue = try SyncQueue(directory: directory, segmentCapacity: 10)
            try queue.append(handed, anchor: (source: "watch", value: Data([1, 2, 3])))
            #expect(queue.pending == 25)
            let first = try #require(try queue.oldest())
            #expect(first.items == Array(handed[0..<10]))
            try queue.acknowledge(first.sequence, through: 4)  // one batch of four went up
        }
        let reopened = try SyncQueue(directory: directory, segmentCapacity: 10)
        #expect(reopened.pending == 21)
        #expect(reopened.anchor(for: "watch") == Data([1, 2, 3]))
        var segment = try #require(try reopened.oldest())
        #expect(segment.acknowledged == 4, "the next batch starts after what the server acknowledged")
        var uploaded = Array(segment.items[segment.acknowledged...])
        try reopened.acknowledge(segment.sequence, through: segment.items.count)
        while let next = try reopened.oldest() {
            segment = next
            uploaded += segment.items
            try reopened.acknowledge(segment.sequence, through: segment.items.count)
        }
        #expect(uploaded == Array(handed[4...]))
        #expect(reopened.pending == 0)
        #expect(try SyncQueue(directory: directory).pending == 0, "acknowledged segments are gone from the disk")
    }

    @Test func whatACrashLeftBehindIsNeitherLostNorTakenForDone() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let segments = directory.appendingPathComponent("segments")
        do {
            let queue = try SyncQueue(directory: directory, segmentCapacity: 10)
            try queue.append(Self.items(10), anchor: nil)
            let segment = try #require(try queue.oldest())
            try queue.acknowledge(segment.sequence, through: 6)
        }
        // A crash removed the segment but not yet its marker (all ten acknowledged), and another
        // left a write half done.
        for name in try FileManager.default.contentsOfDirectory(atPath: segments.path) where name.hasSuffix(".json") {
            try FileManager.default.removeItem(at: segments.appendingPathComponent(name))
        }
        try Data("[{\"sample\":".utf8).write(to: segments.appendingPathComponent("00000000000000000002-10.json.tmp"))

        let queue = try SyncQueue(directory: directory, segmentCapacity: 10)
        #expect(queue.pending == 0)
        #expect(!FileManager.default.fileExists(atPath: segments.appendingPathComponent("00000000000000000002-10.json.tmp").path))
        // The next segment gets number 1 again: the orphan marker must not count it as six-tenths done.
        try queue.append(Self.items(10, from: Date(timeIntervalSince1970: 1_800_000_000)), anchor: nil)
        let fresh = try #require(try SyncQueue(directory: directory).oldest())
        #expect(fresh.acknowledged == 0)
        #expect(fresh.items.count == 10)
    }

    @Test func derivedIDsFollowTheSampleNotTheCall() {
        let start = Date(timeIntervalSince1970: 1_790_000_000.123_4)
        let one = SyncItem.Sample(type: .heartRate, value: .number(72), start: start, source: "Watch")
        let again = SyncItem.Sample(type: .heartRate, value: .number(72), start: start.addingTimeInterval(0.000_05), source: "Watch")
        #expect(one.id == again.id, "the same reading below a millisecond apart is the same sample")
        #expect(one.id.count == 32)
        #expect(one.start.timeIntervalSince1970 == 1_790_000_000.123)
        for other in [
            SyncItem.Sample(type: .heartRate, value: .number(73), start: start, source: "Watch"),
            SyncItem.Sample(type: .heartRate, value: .number(72), start: start, source: "Phone"),
            SyncItem.Sample(type: .respiratoryRate, value: .number(72), start: start, source: "Watch"),
            SyncItem.Sample(type: .heartRate, value: .number(72), start: start.addingTimeInterval(0.001), source: "Watch"),
            SyncItem.Sample(type: .heartRate, value: .number(72), start: start, end: start.addingTimeInterval(60), source: "Watch"),
        ] {
            #expect(other.id != one.id)
        }
        #expect(SyncItem.Sample(id: "HK-UUID", type: .heartRate, value: .number(72), start: start).id == "HK-UUID")
    }

    @Test func timesGoOutWithMillisecondsAndComeInWithAnyOffset() throws {
        let transcoder = MillisecondDateTranscoder()
        #expect(try transcoder.encode(Date(timeIntervalSince1970: 1_790_000_000.25)) == "2026-09-21T14:13:20.250Z")
        #expect(try transcoder.decode("2026-09-21T14:13:20.250Z").timeIntervalSince1970 == 1_790_000_000.25)
        #expect(try transcoder.decode("2026-09-21T14:13:20Z").timeIntervalSince1970 == 1_790_000_000)
        #expect(try transcoder.decode("2026-09-21T16:13:20+02:00").timeIntervalSince1970 == 1_790_000_000)
        #expect(try transcoder.decode("2026-09-21T16:13:20.5+02:00").timeIntervalSince1970 == 1_790_000_000.5)
        #expect(throws: (any Error).self) { try transcoder.decode("yesterday") }
    }
}
