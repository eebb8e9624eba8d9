import Foundation
import HTTPAPI
import HTTPTypes
import Testing

@Suite("GET /api/types")
struct SampleTypeCatalogueTests {
    @Test func listsEveryTypeWithUnitsAndRanges() async throws {
        try await TestServer.run { api in
            let reply = try await api.send(.get, "/api/types")
            #expect(reply.status == .ok)
            #expect(reply.headers[.cacheControl] == "public, max-age=3600")
            let types = Dictionary(uniqueKeysWithValues: reply.items.map { ($0["type"] as! String, $0) })
            #expect(types.count == 12)
            let heartRate = try #require(types["heartRate"])
            #expect(heartRate["unit"] as? String == "bpm")
            #expect(heartRate["minimum"] as? Double == 20)
            #expect(heartRate["maximum"] as? Double == 250)
            #expect(heartRate["interval"] as? Bool == false)
            #expect((types["bloodGlucose"]?["acceptedUnits"] as? [String]) == ["mg/dL", "mmol/L"])
            #expect((types["sleep"]?["values"] as? [String]) == ["awake", "light", "deep", "rem", "asleep", "inBed"])
            #expect(types["sleep"]?["interval"] as? Bool == true)
            #expect(reply.json.keys.contains("nextCursor"))
        }
    }
}
