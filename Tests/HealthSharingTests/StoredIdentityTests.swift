import Foundation
import Testing

@testable import HealthSharing

/// The keys and ids that decide whether two uploads or imports are the same sample are stored:
/// they must never change, whatever the code that computes them becomes. The values below were
/// printed by the first implementations (FNV-1a over the id; SHA-256 of the record's identity),
/// and those for "s1", "Anna’s sample é", "", the sample and the digest were recomputed with
/// Python's `hashlib` and `struct` (an independent reference) and agreed.
@Suite("Stored identities: dedupe keys and import ids never change")
struct StoredIdentityTests {
    @Test func dedupeKeysAreTheStoredOnes() {
        #expect(DedupeKey.forClientId("s1") == 5_257_885_755_774_352_994)
        #expect(DedupeKey.forClientId("ah:00112233445566778899aabbccddeeff") == -2_625_400_227_399_562_749)
        #expect(DedupeKey.forClientId("Anna’s sample é") == 196_493_084_177_704_044)
        #expect(DedupeKey.forClientId("") == 3_133_996_374_873_880_270)
        #expect(DedupeKey.forSample(startMilliseconds: 1_682_922_600_000, value: 72.5) == -7_529_579_417_836_781_575)
        #expect(DedupeKey.forSample(startMilliseconds: -5, value: -0.25) == 335_663_242_716_083_916)
        #expect(DedupeKey.forFix(timeMilliseconds: 1_682_922_600_123, latitude: 45.478, longitude: 9.227) == -9_133_921_441_691_034_917)
    }

    @Test func importIdsAreTheStoredOnes() {
        #expect(
            ImportIdentity.digest(["heartRate", "Anna’s Apple Watch", "2023-05-01T08:30:00+02:00", "", "72"]) == "55f60f3bac4697d8c1b3598308b8afb2")
        #expect(ImportIdentity.digest([]) == "e3b0c44298fc1c149afbf4c8996fb924")
        #expect(AppleHealthDate.rfc3339("2023-05-01 08:30:00 +0200") == "2023-05-01T08:30:00+02:00")
        #expect(AppleHealthDate.rfc3339("2023-05-01 08:30:00 -0730") == "2023-05-01T08:30:00-07:30")
        for wrong in ["2023-05-01T08:30:00 +0200", "2023-05-01 08:30:00 +02:00", "2023-05-01 08:30:00 *0200", "2023-05-01 08:30:00 +02a0", ""] {
            #expect(AppleHealthDate.rfc3339(wrong) == nil)
        }
        var item = RawIngestItem()
        item.type = "heartRate"
        item.source = "Anna’s Apple Watch"
        #expect(
            AppleHealthType.identity(of: item, start: "2023-05-01T08:30:00+02:00", end: nil, value: "72") == "ah:"
                + "55f60f3bac4697d8c1b3598308b8afb2"
        )
    }
}
