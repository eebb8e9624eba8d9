import Foundation
import Testing
import UntrustedXML

@testable import HealthSharing

/// The checkpoint an import commits: read back whatever version wrote it.
@Suite struct ImportCheckpointTests {
    @Test func aBarePositionFromEarlierVersionsReadsAsACheckpoint() throws {
        // What versions before ImportCheckpoint stored: an XMLReader.Position and nothing else.
        let stored = String(decoding: try JSONEncoder().encode(XMLReader.Position(offset: 4_096, line: 88, open: ["HealthData"])), as: UTF8.self)
        let checkpoint = try JSONDecoder().decode(ImportCheckpoint.self, from: Data(stored.utf8))
        #expect(checkpoint.position == XMLReader.Position(offset: 4_096, line: 88, open: ["HealthData"]))
        #expect(checkpoint.routesRead == nil && checkpoint.complete == nil)
    }

    @Test func routesAndCompletionSurviveTheRoundTrip() throws {
        var checkpoint = ImportCheckpoint(XMLReader.Position(offset: 10, line: 2, open: ["HealthData"]))
        checkpoint.routesRead = 3
        let again = try JSONDecoder().decode(ImportCheckpoint.self, from: try JSONEncoder().encode(checkpoint))
        #expect(again == checkpoint)
        let whole = ImportCheckpoint.complete(bytes: 1_234)
        #expect(try JSONDecoder().decode(ImportCheckpoint.self, from: try JSONEncoder().encode(whole)).complete == true)
    }
}
