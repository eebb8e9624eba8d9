import DatabaseTestSupport
import Foundation
import HTTPTypes
import Synchronization
import Testing

/// The organiser's course editor (`/me/runs/new`, `/me/runs/{id}`) in headless Chromium, with
/// real mouse events: points added by clicking the map, one dragged, the length shown as it
/// changes, the event saved and edited, a course read from a FIT file fit-tool (PyPI) wrote.
@Suite("The course editor in a real browser (headless Chromium)")
struct CourseEditorTests {
    static func parse(_ value: Any?) -> [String: Any] {
        ((value as? String).flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) } as? [String: Any]) ?? [:]
    }

    static func mouse(_ session: DevToolsSession, _ type: String, _ x: Double, _ y: Double, buttons: Int = 0) async throws {
        _ = try await session.call(
            "Input.dispatchMouseEvent",
            ["type": type, "x": x, "y": y, "button": type == "mouseMoved" && buttons == 0 ? "none" : "left", "buttons": buttons, "clickCount": 1])
    }

    static func click(_ session: DevToolsSession, _ x: Double, _ y: Double) async throws {
        try await mouse(session, "mouseMoved", x, y)
        try await mouse(session, "mousePressed", x, y, buttons: 1)
        try await mouse(session, "mouseReleased", x, y)
    }

    /// The editor's figures: points, metres, and the map's box on the screen.
    static let figures = """
        JSON.stringify({ points: Number(document.getElementById('course-points').textContent),
          metres: Number(document.getElementById('course-length').dataset.metres || 0),
          box: document.getElementById('course-map').getBoundingClientRect().toJSON(),
          ready: !!document.querySelector('#course-map.leaflet-container') })
        """

    @Test(.timeLimit(.minutes(20))) func drawDragSaveEditAndReadAFile() async throws {
        // Checked first: a missing file would otherwise show up only as a wait timing out at the end.
        let courseFile = try ImportTests.deviceFixturePath("fit-tool-course.fit")
        try await TestServer.run { api in
            let (organiser, account) = try await api.individualSession()
            let email = try #require(account["email"] as? String)
            let base = "http://127.0.0.1:\(try #require(api.client.port))"
            let browser = try await HeadlessChromium()
            defer { browser.stop() }
            let created = Mutex<(id: String, metres: Double, startsAt: String)>(("", 0, ""))
            try await browser.withPage("\(base)/me/login") { session in
                try await PortalBrowserTests.signInToMe(session, email: email)
                try await PortalBrowserTests.go(session, "/me/runs/new")
                _ = try await session.evaluate("document.getElementById('course-map').scrollIntoView({ block: 'center' }), true")
                let start = Self.parse(try await session.wait(for: Self.figures) { Self.parse($0)["ready"] as? Bool == true })
                let box = try #require(start["box"] as? [String: Double])
                let (left, top) = (box["left"] ?? 0, box["top"] ?? 0)

                // Three clicks: three points, a length.
                for (x, y) in [(80.0, 80.0), (280.0, 80.0), (280.0, 230.0)] { try await Self.click(session, left + x, top + y) }
                let drawn = Self.parse(try await session.wait(for: Self.figures) { Self.parse($0)["points"] as? Int == 3 })
                let drawnMetres = try #require(drawn["metres"] as? Double)
                #expect(drawnMetres > 0)

                // Drag the last point 120 px down: the length grows as the drag goes.
                try await Self.mouse(session, "mouseMoved", left + 280, top + 230)
                try await Self.mouse(session, "mousePressed", left + 280, top + 230, buttons: 1)
                for step in 1...6 { try await Self.mouse(session, "mouseMoved", left + 280, top + 230 + Double(step) * 20, buttons: 1) }
                try await Self.mouse(session, "mouseReleased", left + 280, top + 350)
                let dragged = Self.parse(try await session.wait(for: Self.figures) { (Self.parse($0)["metres"] as? Double ?? 0) > drawnMetres + 1 })
                #expect(dragged["points"] as? Int == 3)

                // Save it with the event's other fields (local dates and times).
                _ = try await session.evaluate(
                    """
                    (() => { const f = document.getElementById('run-form');
                      f.elements.startsAtLocal.value = '2027-03-07T09:30'; f.elements.endsAtLocal.value = '2027-03-07T12:00';
                      f.elements.enrolmentDeadlineLocal.value = '2027-03-06T18:00'; return true })()
                    """)
                try await PortalBrowserTests.submit(session, "/me/runs/new", fields: [("name", "Sempione 3K"), ("maxParticipants", "50")])
                try await PortalBrowserTests.text(session, at: "/me/runs/", of: "h1") { $0 == "Edit: Sempione 3K" }
                let path = try await session.evaluate("location.pathname", as: String.self)
                let startsAt = try await session.evaluate("new Date('2027-03-07T09:30').toISOString()", as: String.self)
                created.withLock { $0 = (String(path.split(separator: "/").last ?? ""), dragged["metres"] as? Double ?? 0, startsAt) }
            }
            let (id, metres, startsAt) = created.withLock { $0 }
            var event = try await api.send(.get, "/api/runs/\(id)").json
            #expect(((event["path"] as? [String: Any])?["coordinates"] as? [[Double]])?.count == 3)
            #expect(abs((event["lengthMeters"] as? Double ?? 0) - metres) < 1, "server \(event["lengthMeters"] ?? "") m, page \(metres) m")
            #expect(
                (event["startsAt"] as? String).flatMap { try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse($0) }
                    == (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(startsAt)))
            #expect(event["maxParticipants"] as? Int == 50)

            // Edit: the saved course is drawn again; remove its last point and save.
            try await browser.withPage("\(base)/me/runs/\(id)") { session in
                _ = try await session.wait(for: Self.figures) { Self.parse($0)["points"] as? Int == 3 && Self.parse($0)["ready"] as? Bool == true }
                _ = try await session.evaluate("document.getElementById('undo-point').click(), true")
                _ = try await session.wait(for: Self.figures) { Self.parse($0)["points"] as? Int == 2 }
                try await PortalBrowserTests.submit(session, "/me/runs/\(id)")
                try await PortalBrowserTests.text(session, at: "/me/runs/\(id)", of: "#course-points") { $0 == "2" }

                // A course file fit-tool wrote: read by the server, drawn to edit (not saved here).
                try await PortalBrowserTests.chooseFile(session, "#course-file", courseFile)
                _ = try await session.wait(for: Self.figures) { Self.parse($0)["points"] as? Int == 40 }
                // A file with no path: the server's problem is shown beside the field, the course stays.
                let empty = FileManager.default.temporaryDirectory.appendingPathComponent("empty-\(UUID().uuidString).gpx")
                try Data(#"<?xml version="1.0"?><gpx version="1.1" creator="test" xmlns="http://www.topografix.com/GPX/1/1"></gpx>"#.utf8).write(
                    to: empty)
                defer { try? FileManager.default.removeItem(at: empty) }
                try await PortalBrowserTests.chooseFile(session, "#course-file", empty.path)
                let refused = try await session.wait(for: "document.getElementById('course-file-status').textContent") {
                    ($0 as? String).map { !$0.hasPrefix("Reading") && !$0.contains("points,") } ?? false
                }
                #expect((refused as? String)?.isEmpty == false && (refused as? String)?.contains("could not be sent") == false, "\(refused ?? "")")
                #expect(Self.parse(try await session.evaluate(Self.figures))["points"] as? Int == 40)
            }
            event = try await api.send(.get, "/api/runs/\(id)").json
            #expect(((event["path"] as? [String: Any])?["coordinates"] as? [[Double]])?.count == 2)

            // The organiser's pages are theirs: another individual gets 404, and their list is empty.
            let (_, stranger) = try await api.individualSession()
            var other = try await IndividualPortalTests.signIn(api, stranger)
            #expect(try await other.send(.get, "/me/runs/\(id)").status == .notFound)
            #expect(!PortalBrowser.html(try await other.send(.get, "/me/runs")).contains(id))
            _ = organiser
        }
    }
}
