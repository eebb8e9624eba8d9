import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The sync engine's queue on disk: what the app handed over and the server has not yet
/// acknowledged, so that nothing is lost when the phone is offline or the app is killed.
///
/// Layout of `directory`:
/// - `segments/<sequence>-<count>.json`: up to `segmentCapacity` items each, written once, in the
///   order they were handed over;
/// - `segments/<sequence>.acknowledged`: how many of that segment's items the server has
///   acknowledged (batches go in order, so this is a prefix);
/// - `anchors.json`: each source's anchor (a HealthKit query anchor, a file offset), saved after
///   the items read up to it;
/// - `rejected.jsonl`: the items the server refused and why, for the app to show.
///
/// Every file is written to a temporary name, flushed to the disk, renamed over the old one, and
/// the directory flushed: after a crash a file is either the old one or the new one, whole. A
/// crash between writing the items and the anchor only means the source hands the same items over
/// again, which the server stores once (their ids).
final class SyncQueue {
    /// A segment's items and how far the server has acknowledged them.
    struct Segment {
        let sequence: UInt64
        let items: [SyncItem]
        var acknowledged: Int
    }

    private struct SegmentFile {
        let sequence: UInt64
        let count: Int
        var acknowledged: Int
    }

    let directory: URL
    let segmentCapacity: Int
    private var segments: [SegmentFile]
    private var anchors: [String: Data]
    private var current: Segment?

    private var segmentDirectory: URL { directory.appendingPathComponent("segments", isDirectory: true) }
    private var anchorFile: URL { directory.appendingPathComponent("anchors.json") }
    var rejectedFile: URL { directory.appendingPathComponent("rejected.jsonl") }

    init(directory: URL, segmentCapacity: Int = 10_000) throws {
        self.directory = directory
        self.segmentCapacity = max(1, segmentCapacity)
        let segmentDirectory = directory.appendingPathComponent("segments", isDirectory: true)
        try FileManager.default.createDirectory(at: segmentDirectory, withIntermediateDirectories: true)
        var found: [UInt64: SegmentFile] = [:]
        var acknowledged: [UInt64: Int] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: segmentDirectory.path) {
            if name.hasSuffix(".tmp") {
                // A write a crash interrupted: the items were never handed over as stored.
                try? FileManager.default.removeItem(at: segmentDirectory.appendingPathComponent(name))
            } else if name.hasSuffix(".json"), let dash = name.firstIndex(of: "-"),
                let sequence = UInt64(name[..<dash]), let count = Int(name[name.index(after: dash)...].dropLast(5))
            {
                found[sequence] = SegmentFile(sequence: sequence, count: count, acknowledged: 0)
            } else if name.hasSuffix(".acknowledged"), let sequence = UInt64(name.dropLast(13)) {
                let text = try String(contentsOf: segmentDirectory.appendingPathComponent(name), encoding: .utf8)
                acknowledged[sequence] = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            }
        }
        for (sequence, count) in acknowledged {
            guard var file = found[sequence] else {
                // Its segment is gone (all acknowledged): a later segment may get the same number.
                try? FileManager.default.removeItem(at: segmentDirectory.appendingPathComponent("\(sequence).acknowledged"))
                continue
            }
            file.acknowledged = min(count, file.count)
            found[sequence] = file
        }
        segments = found.values.sorted { $0.sequence < $1.sequence }
        if let data = try? Data(contentsOf: directory.appendingPathComponent("anchors.json")) {
            anchors = try JSONDecoder().decode([String: Data].self, from: data)
        } else {
            anchors = [:]
        }
    }

    /// Items not yet acknowledged by the server.
    var pending: Int { segments.reduce(0) { $0 + $1.count - $1.acknowledged } }

    func anchor(for source: String) -> Data? { anchors[source] }

    /// Stores `items` durably, then `anchor` for its source: on return both survive a crash.
    func append(_ items: [SyncItem], anchor: (source: String, value: Data)?) throws {
        var next = (segments.last?.sequence ?? 0) + 1
        var start = 0
        while start < items.count {
            let end = min(start + segmentCapacity, items.count)
            let chunk = Array(items[start..<end])
            try Self.writeDurably(Self.encoder.encode(chunk), to: segmentURL(next, count: chunk.count))
            segments.append(SegmentFile(sequence: next, count: chunk.count, acknowledged: 0))
            next += 1
            start = end
        }
        if let anchor {
            anchors[anchor.source] = anchor.value
            try Self.writeDurably(Self.encoder.encode(anchors), to: anchorFile)
        }
    }

    /// The oldest segment with items not yet acknowledged, read from the disk once.
    func oldest() throws -> Segment? {
        guard let first = segments.first else { return nil }
        if let current, current.sequence == first.sequence { return current }
        let items = try Self.decoder.decode([SyncItem].self, from: Data(contentsOf: segmentURL(first.sequence, count: first.count)))
        current = Segment(sequence: first.sequence, items: items, acknowledged: first.acknowledged)
        return current
    }

    /// The server acknowledged the segment's items up to `count`; a whole segment is removed.
    func acknowledge(_ sequence: UInt64, through count: Int) throws {
        guard let index = segments.firstIndex(where: { $0.sequence == sequence }) else { return }
        let file = segments[index]
        let marker = segmentDirectory.appendingPathComponent("\(sequence).acknowledged")
        if count >= file.count {
            // The marker first: a crash between the two leaves the segment to be sent again (stored
            // once by the server), never a marker that a later segment of the same number inherits.
            if FileManager.default.fileExists(atPath: marker.path) { try FileManager.default.removeItem(at: marker) }
            try FileManager.default.removeItem(at: segmentURL(sequence, count: file.count))
            try Self.synchronise(directory: segmentDirectory)
            segments.remove(at: index)
            current = nil
        } else {
            try Self.writeDurably(Data(String(count).utf8), to: marker)
            segments[index].acknowledged = count
            current?.acknowledged = count
        }
    }

    /// Keeps the items the server refused, with its reasons, one JSON object a line.
    func recordRejected(_ rejected: [(item: SyncItem, reason: String)]) throws {
        guard !rejected.isEmpty else { return }
        var lines = Data()
        for entry in rejected {
            lines.append(try Self.encoder.encode(RejectedItem(item: entry.item, reason: entry.reason)))
            lines.append(0x0A)
        }
        if !FileManager.default.fileExists(atPath: rejectedFile.path) {
            FileManager.default.createFile(atPath: rejectedFile.path, contents: nil)
        }
        let handle = try FileHandle(forWritingTo: rejectedFile)
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: lines)
        try handle.synchronize()
    }

    /// What the server refused so far (oldest first).
    func rejectedItems() throws -> [RejectedItem] {
        guard let data = try? Data(contentsOf: rejectedFile) else { return [] }
        return try data.split(separator: 0x0A).map { try Self.decoder.decode(RejectedItem.self, from: Data($0)) }
    }

    private func segmentURL(_ sequence: UInt64, count: Int) -> URL {
        segmentDirectory.appendingPathComponent(String(format: "%020llu-%d.json", sequence, count))
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        return encoder
    }()

    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return decoder
    }()

    /// Writes `data` so that after a crash `url` holds either its old content or `data`, whole.
    static func writeDurably(_ data: Data, to url: URL) throws {
        let temporary = url.appendingPathExtension("tmp")
        FileManager.default.createFile(atPath: temporary.path, contents: nil)
        let handle = try FileHandle(forWritingTo: temporary)
        do {
            try handle.write(contentsOf: data)
            try handle.synchronize()
            try handle.close()
        } catch {
            try? handle.close()
            throw error
        }
        guard rename(temporary.path, url.path) == 0 else { throw SyncError.storage("cannot rename \(temporary.lastPathComponent): errno \(errno)") }
        try synchronise(directory: url.deletingLastPathComponent())
    }

    /// Flushes a directory's entries (a rename, a removal) to the disk.
    static func synchronise(directory: URL) throws {
        let descriptor = open(directory.path, O_RDONLY)
        guard descriptor >= 0 else { throw SyncError.storage("cannot open \(directory.path): errno \(errno)") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw SyncError.storage("cannot flush \(directory.path): errno \(errno)") }
    }
}

/// An item the server refused, and its reason (`rejected[].reason` of the upload's answer).
public struct RejectedItem: Codable, Sendable, Hashable {
    public let item: SyncItem
    public let reason: String
}
