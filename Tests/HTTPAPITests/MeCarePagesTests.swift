import Foundation
import HTTPTypes
import Testing

@Suite("Individuals' pages: /me/carers and /me/caring")
struct MeCarePagesTests {
    @Test func inviteAcceptFollowAndStopThroughThePages() async throws {
        try await TestServer.run { api in
            let (person, personAccount) = try await api.individualSession()
            let (_, carerAccount) = try await api.individualSession()
            let carerEmail = try #require(carerAccount["email"] as? String)
            let personName = try #require(personAccount["fullName"] as? String)
            let reading: JSONObject = [
                "type": "bloodGlucose", "value": 97, "unit": "mg/dL", "start": WireFormatTime.string(Date().addingTimeInterval(-60)),
            ]
            #expect(try await api.send(.post, "/api/users/data", token: person, json: ["items": [reading]]).status == .ok)

            var me = try await IndividualPortalTests.signIn(api, personAccount)
            let page = try await me.send(.get, "/me/carers")
            #expect(page.status == .ok && PortalBrowser.html(page).contains("Nobody cares for me here yet"))
            let csrf = try PortalBrowser.csrf(page)
            // Refused field by field, with what was typed kept.
            let bad = try await me.send(.post, "/me/carers", form: [("csrf", csrf), ("email", "nobody")])
            let badHTML = PortalBrowser.html(bad)
            #expect(bad.status == .unprocessableContent && badHTML.contains(#"id="email-error""#) && badHTML.contains(#"id="types-error""#))
            #expect(badHTML.contains(#"value="nobody""#))
            let sent = try await me.send(.post, "/me/carers", form: [("csrf", csrf), ("email", carerEmail), ("types", "bloodGlucose")])
            #expect(sent.status == .seeOther, "\(PortalBrowser.problems(sent))")
            #expect(PortalBrowser.html(try await me.send(.get, "/me/carers")).contains(carerEmail))

            // The carer accepts on their page and sees the reading on /me/caring.
            var carer = try await IndividualPortalTests.signIn(api, carerAccount)
            let invitations = try await carer.send(.get, "/me/carers")
            let invitationsHTML = PortalBrowser.html(invitations)
            #expect(invitationsHTML.contains("\(personName) asks me to follow: blood glucose"))
            let linkId = try #require(
                invitationsHTML.firstMatch(of: /data-invitation="([0-9a-f-]{36})"/).map { String($0.1) })
            let carerCSRF = try PortalBrowser.csrf(invitations)
            #expect(try await carer.send(.post, "/me/carers/invitations/\(linkId)/accept", form: [("csrf", carerCSRF)]).status == .seeOther)
            let caring = PortalBrowser.html(try await carer.send(.get, "/me/caring"))
            #expect(caring.contains(personName) && caring.contains("Blood glucose") && caring.contains("97 mg/dL"))

            // The person's page shows the carer by name; the carer stops; nothing shows any more.
            #expect(PortalBrowser.html(try await me.send(.get, "/me/carers")).contains("accepted"))
            #expect(try await carer.send(.post, "/me/caring/\(linkId)/end", form: [("csrf", carerCSRF)]).status == .seeOther)
            #expect(PortalBrowser.html(try await carer.send(.get, "/me/caring")).contains("I care for nobody here"))
            // Another individual cannot end the person's link through the pages.
            #expect(try await carer.send(.post, "/me/carers/\(linkId)/end", form: [("csrf", carerCSRF)]).status == .notFound)
        }
    }
}
