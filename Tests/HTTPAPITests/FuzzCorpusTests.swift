import DatabaseTestSupport
import DeviceFiles
import Foundation
import HTTPAPI
import RunEvents
import Testing

/// The fuzzers' committed inputs, replayed on every test run: the seed corpus (`Tests/Fuzz/corpus`,
/// files from other encoders among them) and every input a fuzzer ever crashed on
/// (`Tests/Fuzz/regressions`), each through the same entry point libFuzzer drives. A decoder that
/// traps on one of them ends this test process, which fails the suite.
@Suite("Fuzz corpus and regressions replayed")
struct FuzzCorpusTests {
    static let root = TestPostgres.repositoryRoot.appendingPathComponent("Tests/Fuzz")

    static func inputs(_ folder: String, _ target: String) -> [URL] {
        let directory = root.appendingPathComponent(folder).appendingPathComponent(target)
        return ((try? FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)) ?? []).sorted { $0.path < $1.path }
    }

    @Test(arguments: DecoderFuzzing.targets.keys.sorted())
    func everyCommittedInputIsDecodedWithoutATrap(_ target: String) throws {
        let run = try #require(DecoderFuzzing.targets[target])
        let files = Self.inputs("corpus", target) + Self.inputs("regressions", target)
        #expect(!Self.inputs("corpus", target).isEmpty, "no seed corpus for \(target)")
        for file in files { run(try Data(contentsOf: file)) }
    }

    /// GPX written by others (gpxpy's test files, PyPI): every one with track or route points is
    /// read as a course, and the entity bomb is refused.
    @Test func gpxFromOtherEncodersIsRead() throws {
        var read = 0
        for file in Self.inputs("corpus", "gpx") where file.lastPathComponent.hasPrefix("gpxpy-") {
            let data = try Data(contentsOf: file)
            let text = String(decoding: data, as: UTF8.self)
            guard text.contains("<trkpt") || text.contains("<rtept") else { continue }
            let points = try CoursePath.points(from: [UInt8](data), format: .gpx)
            #expect(!points.isEmpty, "\(file.lastPathComponent)")
            read += 1
        }
        #expect(read >= 10)
        #expect(throws: PathError.self) {
            try CoursePath.points(from: [UInt8](try Data(contentsOf: Self.root.appendingPathComponent("corpus/gpx/entity-bomb.gpx"))), format: .gpx)
        }
    }
}
