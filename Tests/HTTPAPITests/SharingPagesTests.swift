import Foundation
import HTTPTypes
import Testing

/// The pages of issue 24: `/portal/profile` and `/portal/offers` for organisations; `/me/offers`,
/// `/me/shares` and `/me/privacy` for individuals — through forms as a browser sends them.
@Suite("Sharing pages: profile, offers, share links, privacy record")
struct SharingPagesTests {
    @Test func anOrganisationPublishesAPersonOffersItAcceptsAndThePrivacyRecordShowsIt() async throws {
        try await TestServer.run { api in
            var acme = PortalBrowser(api)
            let name = "Heartlab\(Fixtures.unique())"
            _ = try await OrganisationPortalTests.signUp(&acme, name: name)
            let profile = try await acme.send(.get, "/portal/profile")
            let csrf = try PortalBrowser.csrf(profile)
            let bad = try await acme.send(.post, "/portal/profile", form: [("csrf", csrf), ("purpose", "Heart research"), ("privacyContact", "x")])
            #expect(bad.status == .unprocessableContent && PortalBrowser.html(bad).contains(#"id="privacyContact-error""#))
            let published = try await acme.send(
                .post, "/portal/profile",
                form: [("csrf", csrf), ("purpose", "Heart research"), ("privacyContact", "dpo@heartlab.test"), ("listed", "yes")])
            #expect(published.status == .seeOther, "\(PortalBrowser.problems(published))")
            #expect(PortalBrowser.html(try await acme.send(.get, "/portal/profile")).contains("dpo@heartlab.test"))

            let (_, account) = try await api.individualSession(["fullName": "Ada Pagetest"])
            var me = try await IndividualPortalTests.signIn(api, account)
            let directory = try await me.send(.get, "/me/offers?q=\(name)")
            let directoryHTML = PortalBrowser.html(directory)
            #expect(directoryHTML.contains(name) && directoryHTML.contains("Heart research"))
            let organisation = try #require(directoryHTML.firstMatch(of: /data-organisation="([0-9a-f-]{36})"/).map { String($0.1) })
            let meCSRF = try PortalBrowser.csrf(directory)
            let refused = try await me.send(.post, "/me/offers", form: [("csrf", meCSRF), ("organisationId", organisation), ("message", "Hi")])
            #expect(refused.status == .unprocessableContent && PortalBrowser.html(refused).contains(#"id="types-error""#))
            let offered = try await me.send(
                .post, "/me/offers",
                form: [("csrf", meCSRF), ("organisationId", organisation), ("types", "heartRate"), ("message", "For your study")])
            #expect(offered.status == .seeOther, "\(PortalBrowser.problems(offered))")

            let incoming = try await acme.send(.get, "/portal/offers")
            let incomingHTML = PortalBrowser.html(incoming)
            #expect(incomingHTML.contains("Ada Pagetest") && incomingHTML.contains("For your study"))
            let offer = try #require(incomingHTML.firstMatch(of: /data-offer="([0-9a-f-]{36})"/).map { String($0.1) })
            let accepted = try await acme.send(.post, "/portal/offers/\(offer)/accept", form: [("csrf", try PortalBrowser.csrf(incoming))])
            #expect(accepted.status == .seeOther && accepted.headers[.location]?.hasPrefix("/portal/requests/") == true)

            let requests = PortalBrowser.html(try await me.send(.get, "/me"))
            #expect(requests.contains("\(name) (I offered)"))
            let privacy = try await me.send(.get, "/me/privacy")
            let privacyHTML = PortalBrowser.html(privacy)
            #expect(privacy.status == .ok && privacyHTML.contains(name) && privacyHTML.contains("granted (offer)"))
            let out = try await me.send(.post, "/me/aggregates", form: [("csrf", meCSRF), ("optOut", "yes"), ("return", "privacy")])
            #expect(out.status == .seeOther && out.headers[.location] == "/me/privacy")
            #expect(PortalBrowser.html(try await me.send(.get, "/me/privacy")).contains("Count me in again"))
        }
    }

    @Test func aShareLinkIsCreatedShownOnceOpenedAndRevokedFromThePages() async throws {
        try await TestServer.run { api in
            let (person, account) = try await api.individualSession(["fullName": "Bea Pagetest"])
            _ = try await api.send(.post, "/api/users/data", token: person, json: ["items": ShareLinkTests.readings])
            var me = try await IndividualPortalTests.signIn(api, account)
            let page = try await me.send(.get, "/me/shares")
            let csrf = try PortalBrowser.csrf(page)
            let form: [(String, String)] = [
                ("csrf", csrf), ("label", "Dr Verdi"), ("types", "heartRate"), ("dataFrom", "2026-11-19"), ("dataTo", "2026-11-25"),
            ]
            let tooLong = try await me.send(.post, "/me/shares", form: form + [("expiresAt", "2099-01-01")])
            #expect(tooLong.status == .unprocessableContent && PortalBrowser.html(tooLong).contains(#"id="expiresAt-error""#))
            let soon = ISO8601DateFormatter.string(from: Date().addingTimeInterval(5 * 86_400), timeZone: .gmt, formatOptions: .withFullDate)
            let created = try await me.send(.post, "/me/shares", form: form + [("expiresAt", soon), ("pin", "")])
            let createdHTML = PortalBrowser.html(created)
            let url = try #require(createdHTML.firstMatch(of: /id="share-url">([^<]+)</).map { String($0.1) })
            let token = try #require(url.split(separator: "/s/").last.map(String.init))
            let shared = try await api.send(.get, "/s/\(token)")
            #expect(shared.status == .ok && String(decoding: shared.data, as: UTF8.self).contains("Health data of Bea Pagetest"))
            // Shown once: the list does not hold it.
            let list = try await me.send(.get, "/me/shares")
            #expect(!PortalBrowser.html(list).contains(token))
            let link = try #require(PortalBrowser.html(list).firstMatch(of: /data-link="([0-9a-f-]{36})"/).map { String($0.1) })
            let detail = PortalBrowser.html(try await me.send(.get, "/me/shares/\(link)"))
            #expect(detail.contains("Opened 1 times") && detail.contains("<td>shown</td>"))
            #expect(PortalBrowser.html(try await me.send(.get, "/me/access-log")).contains("“Dr Verdi” (share link)"))
            #expect(try await me.send(.post, "/me/shares/\(link)/revoke", form: [("csrf", csrf)]).status == .seeOther)
            #expect(try await api.send(.get, "/s/\(token)").status == .notFound)
            // Another individual's pages cannot reach it.
            let (_, other) = try await api.individualSession()
            var stranger = try await IndividualPortalTests.signIn(api, other)
            #expect(try await stranger.send(.get, "/me/shares/\(link)").status == .notFound)
        }
    }
}
