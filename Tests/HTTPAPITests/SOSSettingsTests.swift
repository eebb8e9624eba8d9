import Foundation
import HTTPAPI
import HTTPTypes
import Testing

@Suite("GET/PUT /api/users/sos: AutomatedSOS enrolment and settings")
struct SOSSettingsTests {
    @Test func defaultsThenReplacedSettingsReadBack() async throws {
        try await TestServer.run { api in
            let (person, _) = try await api.individualSession()
            let defaults = try await api.send(.get, "/api/users/sos", token: person)
            #expect(defaults.status == .ok)
            #expect(defaults.json["enabled"] as? Bool == false && defaults.json["minHeartRate"] as? Double == 40)
            #expect(defaults.json["consecutiveReadings"] as? Int == 3 && defaults.json["cancelWindowSeconds"] as? Int == 3)
            #expect(defaults.json["maxHeartRate"] is NSNull && defaults.json["updatedAt"] is NSNull)

            let settings: JSONObject = [
                "enabled": true, "minHeartRate": 45, "maxHeartRate": 160, "minOxygenSaturation": 90, "consecutiveReadings": 4,
                "cancelWindowSeconds": 2, "medicalNotes": "Pacemaker since 2019; allergic to penicillin.",
                "contacts": [["name": "Giulia Rossi", "phone": "+39 333 123 4567", "email": "Giulia@Example.org"] as JSONObject],
            ]
            let put = try await api.send(.put, "/api/users/sos", token: person, json: settings)
            #expect(put.status == .ok)
            let read = try await api.send(.get, "/api/users/sos", token: person).json
            #expect(read["enabled"] as? Bool == true && read["maxHeartRate"] as? Double == 160 && read["consecutiveReadings"] as? Int == 4)
            let contact = try #require((read["contacts"] as? [[String: Any]])?.first)
            #expect(contact["phone"] as? String == "+393331234567" && contact["email"] as? String == "giulia@example.org")
            #expect(read["updatedAt"] is String)

            // The settings, contacts included, are part of my data export.
            let export = String(decoding: try await api.send(.get, "/api/users/export", token: person).data, as: UTF8.self)
            let lines = export.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            let sos = try #require(lines.first { $0["kind"] as? String == "sos" })
            #expect(sos["medicalNotes"] as? String == "Pacemaker since 2019; allergic to penicillin.")

            // Another individual's settings are their own; a third party cannot reach these at all.
            let (other, _) = try await api.individualSession()
            #expect(try await api.send(.get, "/api/users/sos", token: other).json["enabled"] as? Bool == false)
            let (party, _) = try await api.thirdPartySession()
            #expect(try await api.send(.get, "/api/users/sos", token: party).status == .forbidden)
        }
    }

    @Test func invalidSettingsNameTheirFieldsAndChangeNothing() async throws {
        try await TestServer.run { api in
            let (person, _) = try await api.individualSession()
            let cases: [(JSONObject, [String])] = [
                (["minHeartRate": 50, "maxHeartRate": 50], ["maxHeartRate"]),
                (["cancelWindowSeconds": 5], ["cancelWindowSeconds"]),
                (
                    ["consecutiveReadings": 0, "minHeartRate": 5, "minOxygenSaturation": 100],
                    ["consecutiveReadings", "minHeartRate", "minOxygenSaturation"]
                ),
                (
                    [
                        "contacts": [
                            ["name": "", "phone": "333"] as JSONObject,
                            ["phone": "+39 333 1234567", "webhookUrl": "http://10.0.0.1/x"] as JSONObject,
                        ]
                    ],
                    ["contacts[0].name", "contacts[0].phone", "contacts[1].name", "contacts[1].webhookUrl"]
                ),
                (["medicalNotes": String(repeating: "x", count: 2001)], ["medicalNotes"]),
            ]
            for (body, fields) in cases {
                let reply = try await api.send(.put, "/api/users/sos", token: person, json: body)
                #expect(reply.status == .unprocessableContent, "\(body)")
                #expect(reply.problemFields.sorted() == fields.sorted(), "\(body)")
            }
            #expect(try await api.send(.get, "/api/users/sos", token: person).json["updatedAt"] is NSNull)  // nothing was written
        }
    }
}
