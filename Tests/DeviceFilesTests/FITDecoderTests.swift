import DeviceFiles
import Foundation
import Testing

/// The FIT decoder against files written by encoders we did not write: fit-tool (PyPI) and
/// GPSBabel (Debian), made by `make device-fixtures` (which `make test` runs first).
@Suite struct FITDecoderTests {
    @Test func everyRecordOfAFitToolActivityReadsAsWritten() throws {
        let document = try FITActivityReader.read(try DeviceFixtures.bytes("fit-tool-activity.fit"))
        let expected = try DeviceFixtures.json("fit-tool-activity.json")
        let records = try #require(expected["records"] as? [[String: Any]])
        #expect(document.format == .fit && document.creator == expected["creator"] as? String)
        #expect(document.routes.isEmpty && document.tracks.count == 1)
        let points = try #require(document.tracks.first)
        try #require(points.count == records.count)
        for (point, record) in zip(points, records) {
            #expect(point.time == record["time"] as? String)
            #expect(point.heartRate == (record["heartRate"] as? Double))
            // Semicircles hold about 8.4e-8°, altitude 0.2 m, distance 1 cm.
            if let latitude = record["latitude"] as? Double, let longitude = record["longitude"] as? Double {
                #expect(abs((point.latitude ?? .nan) - latitude) < 1e-7 && abs((point.longitude ?? .nan) - longitude) < 1e-7, "\(record)")
            } else {
                #expect(point.position == nil, "a record written without a position has none")
            }
            #expect(abs((point.elevation ?? .nan) - (record["altitude"] as? Double ?? 0)) <= 0.2)
            #expect(abs((point.distance ?? .nan) - (record["distance"] as? Double ?? 0)) <= 0.01)
        }
        let summary = try #require(expected["summary"] as? [String: Any])
        let read = try #require(document.summaries.first)
        #expect(document.summaries.count == 1 && read.sport == "running" && read.start == summary["start"] as? String)
        #expect(read.elapsedSeconds == 600 && read.energyKilocalories == 142 && read.averageHeartRate == 145 && read.maximumHeartRate == 160)
        #expect(abs((read.distanceMetres ?? 0) - (summary["distanceMetres"] as? Double ?? 0)) <= 0.01)
    }

    /// GPSBabel decodes the same file with its own FIT reader: every position agrees.
    @Test func positionsAgreeWithGPSBabelsReadingOfTheSameFile() throws {
        let ours = try FITActivityReader.read(try DeviceFixtures.bytes("fit-tool-activity.fit")).tracks.joined().compactMap(\.position)
        let theirs = try GPXReader.read(try DeviceFixtures.bytes("fit-tool-activity.gpsbabel.gpx")).tracks.joined().compactMap(\.position)
        try #require(ours.count == 540 && theirs.count == ours.count)
        for (a, b) in zip(ours, theirs) {
            #expect(abs(a.latitude - b.latitude) < 1e-6 && abs(a.longitude - b.longitude) < 1e-6)
        }
    }

    @Test func courseFilesFromFitToolAndGPSBabelArePlannedRoutes() throws {
        let course = try FITActivityReader.read(try DeviceFixtures.bytes("fit-tool-course.fit"))
        let expected = try #require(try DeviceFixtures.json("fit-tool-course.json")["points"] as? [[String: Double]])
        #expect(course.tracks.isEmpty && course.routes.count == 1 && course.waypoints == 2)
        let path = try #require(course.firstPath)
        try #require(path.count == expected.count)
        for (point, written) in zip(path, expected) {
            #expect(abs((point.latitude ?? .nan) - written["latitude"]!) < 1e-7 && abs((point.longitude ?? .nan) - written["longitude"]!) < 1e-7)
        }
        // GPSBabel wrote the Garmin track (an empty "ACTIVE LOG", then three points) as a FIT course.
        let gpx = try GPXReader.read(try DeviceFixtures.source("Tests/Fixtures/GPX/garmin-connect-run.gpx")).firstPath ?? []
        let converted = try #require(try FITActivityReader.read(try DeviceFixtures.bytes("gpsbabel-course.fit")).firstPath)
        #expect(converted.count == gpx.count && gpx.count == 3)
        for (a, b) in zip(converted, gpx) {
            #expect(abs((a.latitude ?? .nan) - (b.latitude ?? 0)) < 1e-6 && abs((a.longitude ?? .nan) - (b.longitude ?? 0)) < 1e-6)
        }
    }

    /// Compressed timestamp headers (neither encoder above writes them) and a big-endian
    /// definition: a record every second for 70 s, its time 0–31 s after the last full one,
    /// rolling over twice.
    @Test func compressedTimestampsRollOverAndBigEndianFieldsRead() throws {
        var file = FITBytes()
        file.fileID(type: 4)
        // Local 1: a big-endian record with a timestamp and heart rate.
        file.definition(local: 1, global: 20, bigEndian: true, fields: [(253, 4, 0x86), (3, 1, 0x02)])
        let start: UInt32 = 1_100_000_000 + 27  // 27 s into a 32-second window
        file.data(local: 1, fieldBytes: [Array(withUnsafeBytes(of: start.bigEndian, Array.init)), [100]])
        // Local 0: heart rate only, sent with compressed headers.
        file.definition(local: 0, global: 20, bigEndian: false, fields: [(3, 1, 0x02)])
        for second in 1...70 {
            let offset = UInt8((27 + second) % 32)
            file.compressed(local: 0, offset: offset, fieldBytes: [[UInt8(100 + second)]])
        }
        let points = try #require(try FITActivityReader.read(file.finished()).tracks.first)
        #expect(points.count == 71)
        for (second, point) in points.enumerated() {
            let expected = Date(timeIntervalSince1970: Double(Int64(start) + FITDecoder.epochOffset + Int64(second)))
            #expect(point.time == expected.formatted(.iso8601), "record \(second)")
            #expect(point.heartRate == Double(100 + second))
        }
    }

    @Test func damagedFilesFailWithAReason() throws {
        let good = try DeviceFixtures.bytes("fit-tool-activity.fit")
        func reason(_ bytes: [UInt8]) -> String? {
            do {
                _ = try FITActivityReader.read(bytes)
                return nil
            } catch {
                return error.reason
            }
        }
        #expect(reason(Array(good.prefix(good.count / 2)))?.hasPrefix("is cut off") == true)
        var flipped = good
        flipped[flipped.count / 2] ^= 0x10
        #expect(reason(flipped) == "is damaged: its CRC does not match its contents")
        #expect(reason(Array("<gpx/> is not a FIT file at all".utf8)) == "is not a FIT file (no \".FIT\" signature)")
        #expect(reason([]) == "is empty")
        // Two files chained, the second cut off: named as such.
        #expect(reason(good + good.prefix(20))?.contains("chained file 2") == true)
        #expect(try FITActivityReader.read(good + good).tracks.first?.count == 1200, "chained files are read one after the other")
    }
}

/// Builds FIT bytes for the cases no encoder we have writes; the CRC is ours, checked against
/// fit-tool's files above.
struct FITBytes {
    private var records: [UInt8] = []

    mutating func fileID(type: UInt8) {
        definition(local: 0, global: 0, bigEndian: false, fields: [(0, 1, 0x00)])
        data(local: 0, fieldBytes: [[type]])
    }

    mutating func definition(local: UInt8, global: UInt16, bigEndian: Bool, fields: [(UInt8, UInt8, UInt8)]) {
        records += [0x40 | local, 0, bigEndian ? 1 : 0]
        records += bigEndian ? [UInt8(global >> 8), UInt8(global & 0xFF)] : [UInt8(global & 0xFF), UInt8(global >> 8)]
        records.append(UInt8(fields.count))
        for field in fields { records += [field.0, field.1, field.2] }
    }

    mutating func data(local: UInt8, fieldBytes: [[UInt8]]) {
        records.append(local)
        for bytes in fieldBytes { records += bytes }
    }

    mutating func compressed(local: UInt8, offset: UInt8, fieldBytes: [[UInt8]]) {
        records.append(0x80 | local << 5 | offset)
        for bytes in fieldBytes { records += bytes }
    }

    func finished() -> [UInt8] {
        let size = UInt32(records.count)
        var file: [UInt8] = [12, 0x20, 0x08, 0x08] + withUnsafeBytes(of: size.littleEndian, Array.init) + Array(".FIT".utf8) + records
        let crc = FITCRCForTests.checksum(file)
        file += [UInt8(crc & 0xFF), UInt8(crc >> 8)]
        return file
    }
}

/// CRC-16/ARC written out bit by bit (not the decoder's nibble table), so a mistake in one does
/// not hide in the other.
enum FITCRCForTests {
    static func checksum(_ bytes: [UInt8]) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xA001 : crc >> 1 }
        }
        return crc
    }
}
