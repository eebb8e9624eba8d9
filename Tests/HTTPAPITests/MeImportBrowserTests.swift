import DatabaseTestSupport
import Foundation
import HTTPAPI
import Testing

/// `/me/imports` and `/me/workouts` in a real browser (headless Chromium): a person chooses a
/// FIT file fit-tool wrote, watches it upload and be read, then finds the workout with its route
/// and heart-rate curve drawn.
@Suite("Imports and workouts in a real browser (headless Chromium)")
struct MeImportBrowserTests {
    @Test(.timeLimit(.minutes(20))) func aFileChosenOnThePageIsImportedAndItsWorkoutDrawn() async throws {
        let fit = TestPostgres.repositoryRoot.appendingPathComponent(".build/device-fixtures/fit-tool-activity.fit")
        _ = try ImportTests.deviceFixture("fit-tool-activity.fit")
        try await TestServer.run { api in
            let (_, account) = try await api.individualSession()
            let email = try #require(account["email"] as? String)
            let base = "http://127.0.0.1:\(try #require(api.client.port))"
            let browser = try await HeadlessChromium()
            defer { browser.stop() }
            try await browser.withPage("\(base)/me/login") { session in
                try await PortalBrowserTests.signInToMe(session, email: email)
                try await PortalBrowserTests.go(session, "/me/imports")
                try await PortalBrowserTests.text(session, at: "/me/imports", of: "h1") { $0 == "Import my data" }

                // Choose the file as a person would (the DevTools protocol's file chooser), then Import.
                try await PortalBrowserTests.chooseFile(session, "#import-file", fit.path)
                #expect(
                    try await session.evaluate("document.querySelector('#import-file').files[0].name", as: String.self) == "fit-tool-activity.fit")
                #expect(try await session.evaluate("document.querySelector('#import-form').requestSubmit(), true", as: Bool.self))

                // The upload's bar fills, then the import is read: its state and figures show.
                // Reading the file is background work: wait as long as the import tests do for it.
                let state = try await PortalBrowserTests.text(session, at: "/me/imports", of: "#import-state", timeout: .seconds(90)) {
                    $0.hasPrefix("Done") || $0.hasPrefix("Failed")
                }
                #expect(state == "Done: 1,141 records read.", "\(state)")  // 540 fixes, 600 heart rates, 1 workout
                #expect(try await session.evaluate("document.querySelector('#upload-progress').value", as: Int.self) == 100)
                #expect(try await session.evaluate("document.querySelector('#processing-progress').value", as: Int.self) == 100)
                let figures = try await session.evaluate(
                    """
                    [...document.querySelectorAll('#import-result tbody tr')].map(r => [...r.cells].map(c => c.textContent).join(' ')).join('; ')
                    """, as: String.self)
                #expect(figures == "heartRate 600 0; location 540 0; workout 1 0", "\(figures)")

                // The history lists it after a reload; the workout is on its page, drawn.
                try await PortalBrowserTests.go(session, "/me/imports")
                #expect(try await PortalBrowserTests.text(session, at: "/me/imports", of: "#imports tbody tr td:nth-child(3)") == "done")
                try await PortalBrowserTests.go(session, "/me/workouts")
                try await PortalBrowserTests.text(session, at: "/me/workouts", of: "#workouts tbody tr td:nth-child(2)") { $0 == "Running" }
                let link = try await session.evaluate("document.querySelector('#workouts tbody a').getAttribute('href')", as: String.self)
                try await PortalBrowserTests.go(session, link)
                try await PortalBrowserTests.text(session, at: "/me/workouts/", of: "#workout-figures dd") { $0 == "0:10:00" }
                let points = try await session.evaluate(
                    "document.querySelector('svg.route polyline').getAttribute('points').split(' ').length", as: Int.self)
                let rates = try await session.evaluate(
                    "document.querySelector('svg.heart-rate polyline').getAttribute('points').split(' ').length", as: Int.self)
                #expect(points == 540 && rates == 600, "\(points) route points, \(rates) heart-rate points")
                // Drawn inside the picture, not as a line squashed at its edge.
                let box = try await session.evaluate(
                    "(b => JSON.stringify({ width: b.width, height: b.height }))(document.querySelector('svg.route polyline').getBBox())",
                    as: String.self)
                let size = try #require(try JSONSerialization.jsonObject(with: Data(box.utf8)) as? [String: Double])
                #expect((size["width"] ?? 0) > 300 && (size["height"] ?? 0) > 200, "\(box)")
                try await PortalBrowserTests.checkPhoneWidthAndLabels(session, pages: ["/me/imports", "/me/workouts", link])
            }
        }
    }
}
