import Foundation
import HTTPTypes
import Synchronization
import Testing

/// Issue 24's pages in a real browser (headless Chromium): a person creates a share link with a
/// PIN on `/me/shares`; a doctor, in a browser of their own with no account, opens it, enters
/// the PIN and sees the charts — and the page prints without the page around them. The new
/// pages of both portals are checked at a phone's width.
@Suite("Share links and offers in a real browser (headless Chromium)")
struct SharingBrowserTests {
    @Test(.timeLimit(.minutes(20))) func aDoctorOpensAShareLinkWithItsPinAndPrintsIt() async throws {
        try await TestServer.run { api in
            let (person, account) = try await api.individualSession(["fullName": "Carla Browser"])
            _ = try await api.send(.post, "/api/users/data", token: person, json: ["items": ShareLinkTests.readings])
            let base = "http://127.0.0.1:\(try #require(api.client.port))"
            let email = try #require(account["email"] as? String)
            let patient = try await HeadlessChromium(), doctor = try await HeadlessChromium(), organisation = try await HeadlessChromium()
            defer { patient.stop(); doctor.stop(); organisation.stop() }
            let shared = Mutex("")

            try await patient.withPage("\(base)/me/login") { session in
                try await PortalBrowserTests.signInToMe(session, email: email)
                try await PortalBrowserTests.go(session, "/me/shares")
                try await PortalBrowserTests.text(session, at: "/me/shares", of: "h1")
                try await PortalBrowserTests.submit(
                    session, "/me/shares", fields: [("label", "Dr Neri"), ("dataFrom", "2026-11-19"), ("dataTo", "2026-11-25"), ("pin", "4321")],
                    ticks: [("types", "heartRate")])
                let url = try await PortalBrowserTests.text(session, at: "/me/shares", of: "#share-url") { $0.contains("/s/d4hs_") }
                shared.withLock { $0 = url }
                try await PortalBrowserTests.checkPhoneWidthAndLabels(session, pages: ["/me/shares", "/me/offers", "/me/privacy", "/me/insights"])
            }
            let url = shared.withLock { $0 }
            let start = try #require(url.range(of: "/s/")).lowerBound
            let path = String(url[start...])

            try await doctor.withPage("\(base)\(path)") { session in
                try await PortalBrowserTests.text(session, at: "/s/", of: "#pin-form label") { $0 == "PIN" }
                #expect(try await session.evaluate("document.querySelectorAll('svg.chart').length", as: Int.self) == 0)
                #expect(try await session.evaluate("document.querySelector('meta[name=robots]').content", as: String.self).contains("noindex"))
                #expect(try await session.evaluate("document.querySelector('meta[name=referrer]').content", as: String.self) == "no-referrer")
                try await session.navigating("sending the PIN") {
                    _ = try await session.evaluate(
                        "(() => { const f = document.querySelector('#pin-form'); f.elements.pin.value = '4321'; f.requestSubmit(); return true })()",
                        as: Bool.self)
                }
                try await PortalBrowserTests.text(session, at: "/s/", of: "h1") { $0 == "Health data of Carla Browser" }
                #expect(try await session.evaluate("document.querySelectorAll('svg.chart rect.bar').length", as: Int.self) == 3)
                // Printed: the header and the screen-only hint go, the chart and the table stay.
                _ = try await session.call("Emulation.setEmulatedMedia", ["media": "print"])
                let printed = try await session.evaluate(
                    """
                    JSON.stringify([getComputedStyle(document.querySelector('header')).display,
                                    getComputedStyle(document.querySelector('.screen-only')).display,
                                    getComputedStyle(document.querySelector('.print-only')).display,
                                    getComputedStyle(document.querySelector('svg.chart')).display,
                                    getComputedStyle(document.querySelector('table')).display])
                    """, as: String.self)
                #expect(printed == #"["none","none","block","inline","table"]"#, "\(printed)")
                _ = try await session.call("Emulation.setEmulatedMedia", ["media": ""])
                try await PortalBrowserTests.checkPhoneWidthAndLabels(session, pages: [path])
            }

            try await organisation.withPage("\(base)/portal/signup") { session in
                try await PortalBrowserTests.text(session, at: "/portal/signup", of: "h1")
                try await PortalBrowserTests.signUp(session, name: "Neri Clinic", email: "clinic-\(Fixtures.unique())@neri.example")
                try await PortalBrowserTests.go(session, "/portal/profile")
                try await PortalBrowserTests.submit(
                    session, "/portal/profile", fields: [("purpose", "Cardiology follow-up"), ("privacyContact", "dpo@neri.example")],
                    ticks: [("listed", "yes")])
                try await PortalBrowserTests.text(session, at: "/portal/profile", of: "#purpose") { $0 == "Cardiology follow-up" }
                try await PortalBrowserTests.checkPhoneWidthAndLabels(session, pages: ["/portal/profile", "/portal/offers"])
            }
        }
    }
}
