import Foundation
import HTTPAPI
import HTTPTypes
import HummingbirdTesting
import Testing

@Suite("The spectators' page in a real browser (headless Chromium)")
struct SpectatorPageTests {
    /// What the page shows: the first runner marker's position, the leaderboard rows, the status line.
    static let probe = """
        JSON.stringify({
          cx: document.querySelector('#runners [data-runner] circle')?.getAttribute('cx') ?? null,
          course: document.getElementById('path').getAttribute('points').split(' ').filter(Boolean).length,
          rows: [...document.querySelectorAll('#leaderboard tr')].map(r => [...r.cells].map(c => c.textContent)),
          status: document.getElementById('status').textContent
        })
        """

    static func parse(_ value: Any?) -> [String: Any] {
        ((value as? String).flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) } as? [String: Any]) ?? [:]
    }

    @Test(.timeLimit(.minutes(20))) func theRunnersMarkerMovesAndTheLeaderboardUpdates() async throws {
        try await TestServer.run { api in
            let (organiser, _) = try await api.individualSession()
            let (runner, _) = try await api.individualSession(), (second, _) = try await api.individualSession()
            let (id, startsAt) = try await RunPositionTests.liveEvent(api, organiser, enrolling: [(runner, "Giulia"), (second, "Marco")])
            try await Task.sleep(until: .now + .seconds(max(0, startsAt.timeIntervalSinceNow) + 0.2))
            _ = try await api.send(
                .post, "/api/users/runs/\(id)/positions", token: runner,
                json: [
                    "positions": [
                        RunPositionTests.fix(0, at: startsAt.addingTimeInterval(1)), RunPositionTests.fix(20, at: startsAt.addingTimeInterval(3)),
                    ]
                ])

            let page = try await api.send(.get, "/runs/\(id)")
            #expect(page.status == .ok && page.headers[.contentType]?.hasPrefix("text/html") == true)
            // No inline script: the CSP allows this origin's scripts only, and the page loads its own.
            #expect(page.headers[.contentSecurityPolicy]?.contains("script-src 'self';") == true)
            #expect(!String(decoding: page.data, as: UTF8.self).contains("<script>"))
            let script = try await api.send(.get, "/assets/run.js")
            #expect(script.status == .ok && script.headers[.contentType]?.hasPrefix("text/javascript") == true)
            #expect(try await api.send(.get, "/assets/nothing.js").status == .notFound)
            #expect(try await api.send(.get, "/runs/\(UUID().uuidString.lowercased())").status == .notFound)

            let browser = try await HeadlessChromium()
            defer { browser.stop() }
            let port = try #require(api.client.port)
            try await browser.withPage("http://127.0.0.1:\(port)/runs/\(id)") { session in
                let first = Self.parse(
                    try await session.wait(for: Self.probe) { value in
                        let shown = Self.parse(value)
                        return shown["status"] as? String == "Live" && shown["cx"] is String && (shown["rows"] as? [[String]])?.count == 2
                    })
                #expect((first["course"] as? Int) == 3)  // the course is drawn: three points
                let rows = try #require(first["rows"] as? [[String]])
                #expect(rows[0][0] == "1" && rows[0][1] == "Giulia" && rows[0][2] == "0.02")
                #expect(rows.count == 2 && rows[1][1] == "Marco", "\(rows)")  // no fix yet
                let startX = try #require(Double(first["cx"] as? String ?? ""))

                // The runner moves on 60 m: the marker moves east and the leaderboard follows.
                _ = try await api.send(
                    .post, "/api/users/runs/\(id)/positions", token: runner,
                    json: ["positions": [RunPositionTests.fix(80, at: startsAt.addingTimeInterval(9))]])
                let moved = Self.parse(
                    try await session.wait(for: Self.probe) { value in
                        (Self.parse(value)["rows"] as? [[String]])?.first?[2] == "0.08"
                    })
                let movedX = try #require(Double(moved["cx"] as? String ?? ""))
                #expect(movedX > startX + 100, "\(startX) → \(movedX)")  // 60 m of a 150 m leg is 360 of the 900 drawn

                // Marco passes her: he leads, and her new rank (from the order's moves: she did not post) shows.
                _ = try await api.send(
                    .post, "/api/users/runs/\(id)/positions", token: second,
                    json: [
                        "positions": [
                            RunPositionTests.fix(0, at: startsAt.addingTimeInterval(1)),
                            RunPositionTests.fix(100, at: startsAt.addingTimeInterval(10)),
                        ]
                    ])
                let passed = Self.parse(
                    try await session.wait(for: Self.probe) { value in
                        (Self.parse(value)["rows"] as? [[String]])?.first?[1] == "Marco"
                    })
                let order = try #require(passed["rows"] as? [[String]])
                #expect(order.map { [$0[0], $0[1]] } == [["1", "Marco"], ["2", "Giulia"]], "\(order)")

                // The page's decoder of the compact protocol puts each runner where the server has
                // them: within a metre of the stored position.
                let decoded = Self.parse(
                    try await session.evaluate(
                        """
                        JSON.stringify(Object.fromEntries([...document.querySelectorAll('#runners [data-runner]')].map(m =>
                          [m.dataset.runner, [Number(m.dataset.latitude), Number(m.dataset.longitude)]])))
                        """))
                let stored = try await api.send(.get, "/api/runs/\(id)/leaderboard").items
                #expect(decoded.count == 2)
                for runner in stored {
                    let position = try #require(decoded[runner["runnerId"] as? String ?? ""] as? [Double])
                    let metres = RunLiveTests.metres(
                        (position[0], position[1]), (runner["latitude"] as? Double ?? 90, runner["longitude"] as? Double ?? 0))
                    #expect(metres < 1, "\(runner["displayName"] ?? "") is \(metres) m from where the server has them")
                }

                // Following Giulia from the leaderboard: her row and marker are highlighted, the
                // page's address keeps it, and her next move still arrives.
                let giulia = try #require(stored.first { $0["displayName"] as? String == "Giulia" }?["runnerId"] as? String)
                #expect(
                    try await session.evaluate(
                        "document.querySelector('#leaderboard tr[data-runner=\"\(giulia)\"] button.follow').click() ?? true", as: Bool.self))
                let following = Self.parse(
                    try await session.wait(
                        for:
                            "JSON.stringify({row: document.querySelector('tr.followed')?.dataset.runner ?? null, marker: document.querySelector('.runner.followed')?.dataset.runner ?? null, url: location.search})"
                    ) { Self.parse($0)["row"] as? String == giulia })
                #expect(following["marker"] as? String == giulia && following["url"] as? String == "?follow=\(giulia)")
                _ = try await api.send(
                    .post, "/api/users/runs/\(id)/positions", token: runner,
                    json: ["positions": [RunPositionTests.fix(120, at: startsAt.addingTimeInterval(14))]])
                _ = try await session.wait(for: Self.probe) { value in
                    (Self.parse(value)["rows"] as? [[String]])?.contains { $0[1] == "Giulia" && $0[2] == "0.12" } == true
                }
                let screenshot = try await session.call("Page.captureScreenshot", ["format": "png"])
                if let data = (screenshot["data"] as? String).flatMap({ Data(base64Encoded: $0) }) {
                    try? data.write(to: FileManager.default.temporaryDirectory.appendingPathComponent("data4help-spectator-page.png"))
                }
            }
        }
    }

    /// With `MAP_TILE_URL` pointed at a tile server of the test's own, the page draws the course
    /// and the runners with Leaflet (served by us from Debian's libjs-leaflet) over the tiles it
    /// fetched: each runner's dot is where its position falls on the tile grid (Web Mercator),
    /// within two pixels.
    /// Ten runners overtaking each other in four rounds of concurrent posts: after each round the
    /// page's leaderboard, which it orders from the snapshot's order and each update's `moves`,
    /// is the server's, rank for rank.
    @Test(.timeLimit(.minutes(20))) func theLeaderboardFollowsTheOrdersMovesThroughOvertakes() async throws {
        try await TestServer.run { api in
            let (organiser, _) = try await api.individualSession()
            var enrolling: [(token: String, name: String)] = []
            for number in 0..<10 { enrolling.append((try await api.individualSession().0, "Runner \(number)")) }
            let runners = enrolling
            let (id, startsAt) = try await RunPositionTests.liveEvent(api, organiser, enrolling: runners)
            try await Task.sleep(until: .now + .seconds(max(0, startsAt.timeIntervalSinceNow) + 0.2))

            let browser = try await HeadlessChromium()
            defer { browser.stop() }
            let port = try #require(api.client.port)
            try await browser.withPage("http://127.0.0.1:\(port)/runs/\(id)") { session in
                _ = try await session.wait(for: Self.probe) { value in Self.parse(value)["status"] as? String == "Live" }
                // Each round every runner covers 3 to 30 m more (their order shuffles), all at the
                // same second, so the ranking is by distance; the fractions keep distances apart.
                func step(_ runner: Int, _ round: Int) -> Double { Double((runner * 3 + round * 7) % 10) * 3 }
                var metres = (0..<10).map { (runner: Int) -> Double in 5 + Double(runner * 7 % 10) * 3 + Double(runner) * 0.1 }
                for round in 1...4 {
                    if round > 1 { metres = metres.indices.map { (runner: Int) -> Double in metres[runner] + 3 + step(runner, round) } }
                    let at = startsAt.addingTimeInterval(Double(round * 5)), posting = metres
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for (number, runner) in runners.enumerated() {
                            group.addTask {
                                let posted = try await api.send(
                                    .post, "/api/users/runs/\(id)/positions", token: runner.token,
                                    json: ["positions": [RunPositionTests.fix(posting[number], at: at)]])
                                #expect(posted.status == .ok && posted.json["accepted"] as? Int == 1, "\(posted.json)")
                            }
                        }
                        try await group.waitForAll()
                    }
                    let server = try await api.send(.get, "/api/runs/\(id)/leaderboard").items.map {
                        ["\($0["rank"] as? Int ?? 0)", $0["displayName"] as? String ?? ""]
                    }
                    #expect(server.map { $0[1] } == runners.indices.sorted { metres[$0] > metres[$1] }.map { runners[$0].name })
                    let shown = Self.parse(
                        try await session.wait(for: Self.probe) { value in
                            (Self.parse(value)["rows"] as? [[String]])?.map { [$0[0], $0[1]] } == server
                        })
                    #expect((shown["rows"] as? [[String]])?.count == 10, "round \(round)")
                }
            }
        }
    }

    @Test(.timeLimit(.minutes(20))) func theMapPutsRunnersOnTheTiles() async throws {
        let tiles = try TileServer()
        let tileServer = tiles.start()
        defer { tileServer.cancel() }
        try await TestServer.run(configure: {
            $0.mapTileURL = tiles.template
            $0.mapAttribution = "Test tiles"
        }) { api in
            let (organiser, _) = try await api.individualSession()
            let (runner, _) = try await api.individualSession(), (second, _) = try await api.individualSession()
            let (id, startsAt) = try await RunPositionTests.liveEvent(api, organiser, enrolling: [(runner, "Giulia"), (second, "Marco")])
            try await Task.sleep(until: .now + .seconds(max(0, startsAt.timeIntervalSinceNow) + 0.2))
            for (token, metres) in [(runner, 40.0), (second, 90.0)] {
                _ = try await api.send(
                    .post, "/api/users/runs/\(id)/positions", token: token,
                    json: [
                        "positions": [
                            RunPositionTests.fix(0, at: startsAt.addingTimeInterval(1)),
                            RunPositionTests.fix(metres, at: startsAt.addingTimeInterval(20)),
                        ]
                    ])
            }
            let page = try await api.send(.get, "/runs/\(id)")
            #expect(page.headers[.contentSecurityPolicy]?.contains("img-src 'self' http://127.0.0.1:\(tiles.port);") == true)
            let leaflet = try await api.send(.get, "/assets/leaflet/leaflet.js")
            #expect(leaflet.status == .ok && leaflet.headers[.contentType]?.hasPrefix("text/javascript") == true)
            #expect(try await api.send(.get, "/assets/leaflet/leaflet.css").status == .ok)

            let browser = try await HeadlessChromium()
            defer { browser.stop() }
            try await browser.withPage("http://127.0.0.1:\(try #require(api.client.port))/runs/\(id)") { session in
                // Each dot's centre against where Web Mercator puts its position on a loaded tile.
                let placement = """
                    (() => {
                      const tile = document.querySelector('img.leaflet-tile-loaded');
                      const dots = [...document.querySelectorAll('.leaflet-overlay-pane [data-runner]')];
                      if (!tile || dots.length < 2) return JSON.stringify({ ready: false });
                      const [z, x, y] = new URL(tile.src).pathname.split('/').slice(-3).map(p => parseInt(p));
                      const t = tile.getBoundingClientRect(), scale = t.width / 256;
                      const errors = dots.map(d => {
                        const lat = Number(d.dataset.latitude) * Math.PI / 180, lon = Number(d.dataset.longitude);
                        const worldX = (lon + 180) / 360 * 256 * 2 ** z;
                        const worldY = (1 - Math.log(Math.tan(lat) + 1 / Math.cos(lat)) / Math.PI) / 2 * 256 * 2 ** z;
                        const r = d.getBoundingClientRect();
                        return Math.hypot(t.left + (worldX - x * 256) * scale - (r.left + r.width / 2), t.top + (worldY - y * 256) * scale - (r.top + r.height / 2));
                      });
                      return JSON.stringify({ ready: true, errors, svgHidden: document.getElementById('course').hasAttribute('hidden'),
                        names: [...document.querySelectorAll('.leaflet-tooltip.runner-name')].map(e => e.textContent).sort(),
                        attribution: document.querySelector('.leaflet-control-attribution')?.textContent ?? '' });
                    })()
                    """
                // Ready, and still: tiles and dots settle once the map's zoom animation has ended.
                var previous: [Double] = []
                let shown = Self.parse(
                    try await session.wait(for: placement) { value in
                        let errors = Self.parse(value)["errors"] as? [Double] ?? []
                        defer { previous = errors }
                        return Self.parse(value)["ready"] as? Bool == true && errors.count == 2 && errors == previous
                    })
                let errors = try #require(shown["errors"] as? [Double])
                #expect(errors.count == 2 && errors.allSatisfy { $0 < 2 }, "\(errors) px")
                #expect(shown["svgHidden"] as? Bool == true && shown["names"] as? [String] == ["Giulia", "Marco"])
                #expect((shown["attribution"] as? String)?.contains("Test tiles") == true)
                // Clicking Marco's dot follows him: it turns purple and the address keeps him.
                let clicked = try await session.evaluate(
                    """
                    (() => { const dot = [...document.querySelectorAll('.leaflet-overlay-pane [data-runner]')]
                        .find(d => d.dataset.runner === document.querySelector('#leaderboard tr:first-child').dataset.runner);
                      dot.dispatchEvent(new MouseEvent('click', { bubbles: true })); return dot.dataset.runner })()
                    """, as: String.self)
                let followed = try await session.wait(for: "document.querySelector('.leaflet-overlay-pane .followed')?.dataset.runner ?? ''") {
                    $0 as? String == clicked
                }
                #expect(followed as? String == clicked)
                #expect(try await session.evaluate("location.search", as: String.self) == "?follow=\(clicked)")
            }
            #expect(tiles.paths.contains { $0.hasPrefix("/tiles/") && $0.hasSuffix(".png") })
        }
    }

    /// A field of 102 on the map, one runner followed: every runner's dot is drawn, but the
    /// names only of the followed runner (thousands of permanent labels cover the map and took
    /// the browser seconds a message to place), and the leaderboard lists the hundred leaders,
    /// then the followed runner, then how many more there are.
    @Test(.timeLimit(.minutes(20))) func aBigFieldKeepsTheLeaderboardAndTheLabelsWithinBounds() async throws {
        let tiles = try TileServer()
        let tileServer = tiles.start()
        defer { tileServer.cancel() }
        try await TestServer.run(configure: { $0.mapTileURL = tiles.template }) { api in
            let (organiser, _) = try await api.individualSession()
            // One at a time: 102 registrations at once had the test's client reset under a loaded
            // `make test` (errno 104).
            var enrolling: [(token: String, name: String)] = []
            for number in 0..<102 { enrolling.append((try await api.individualSession().token, "Runner \(number)")) }
            let runners = enrolling
            let (id, startsAt) = try await RunPositionTests.liveEvent(api, organiser, enrolling: runners, maxParticipants: 200)
            try await Task.sleep(until: .now + .seconds(max(0, startsAt.timeIntervalSinceNow) + 0.2))
            for (number, runner) in runners.enumerated() {
                let posted = try await api.send(
                    .post, "/api/users/runs/\(id)/positions", token: runner.token,
                    json: ["positions": [RunPositionTests.fix(1 + Double(number), at: startsAt.addingTimeInterval(5))]])
                #expect(posted.status == .ok)
            }
            let board = try await api.send(.get, "/api/runs/\(id)/leaderboard").items
            let last = try #require(board.last)
            let (lastId, lastName) = (try #require(last["runnerId"] as? String), try #require(last["displayName"] as? String))

            let browser = try await HeadlessChromium()
            defer { browser.stop() }
            try await browser.withPage("http://127.0.0.1:\(try #require(api.client.port))/runs/\(id)?follow=\(lastId)") { session in
                let shown = Self.parse(
                    try await session.wait(
                        for: """
                            JSON.stringify({
                              dots: document.querySelectorAll('.leaflet-overlay-pane [data-runner]').length,
                              labels: [...document.querySelectorAll('.leaflet-tooltip.runner-name')].map(e => e.textContent),
                              rows: [...document.querySelectorAll('#leaderboard tr')].map(r => [r.dataset.runner ?? '', r.cells[0].textContent, r.className])
                            })
                            """
                    ) { value in
                        let shown = Self.parse(value)
                        return shown["dots"] as? Int == 102 && (shown["rows"] as? [[String]])?.count == 102
                    })
                #expect(shown["labels"] as? [String] == [lastName])
                let rows = try #require(shown["rows"] as? [[String]])
                #expect(rows.prefix(100).map { $0[1] } == (1...100).map(String.init))
                #expect(rows[100] == [lastId, "102", "followed"])
                #expect(rows[101][1].contains("1 more runners"), "\(rows[101])")
            }
        }
    }

    /// The page's connection drops (a proxy between browser and server cuts it): the page says so,
    /// reconnects by itself, and starts again from a fresh snapshot — with what happened while it
    /// was away.
    @Test(.timeLimit(.minutes(20))) func aDroppedConnectionReconnectsAndResumesFromAFreshSnapshot() async throws {
        try await TestServer.run { api in
            let (organiser, _) = try await api.individualSession()
            let (runner, _) = try await api.individualSession()
            let (id, startsAt) = try await RunPositionTests.liveEvent(api, organiser, enrolling: [(runner, "Giulia")])
            try await Task.sleep(until: .now + .seconds(max(0, startsAt.timeIntervalSinceNow) + 0.2))
            _ = try await api.send(
                .post, "/api/users/runs/\(id)/positions", token: runner,
                json: [
                    "positions": [
                        RunPositionTests.fix(0, at: startsAt.addingTimeInterval(1)), RunPositionTests.fix(20, at: startsAt.addingTimeInterval(5)),
                    ]
                ])
            let proxy = try await DroppingProxy(to: try #require(api.client.port))
            defer { proxy.stop() }
            let browser = try await HeadlessChromium()
            defer { browser.stop() }
            try await browser.withPage("http://127.0.0.1:\(proxy.port)/runs/\(id)") { session in
                _ = try await session.wait(for: Self.probe) { value in
                    Self.parse(value)["status"] as? String == "Live" && (Self.parse(value)["rows"] as? [[String]])?.first?[2] == "0.02"
                }
                // Cut, and mark the page so that a reload (which would also show the new state) is told
                // apart. The page says "Reconnecting…" for half a second before it reconnects: the
                // page records every status it shows, since a poll on a loaded machine can miss it.
                _ = try await session.evaluate(
                    """
                    window.sameDocument = true; window.statuses = [];
                    const status = document.getElementById('status');
                    new MutationObserver(() => window.statuses.push(status.textContent))
                      .observe(status, { childList: true, characterData: true, subtree: true });
                    """)
                proxy.dropAll()
                _ = try await session.wait(for: "window.statuses.includes('Reconnecting…')") { $0 as? Bool == true }
                // She moves on while the page is away; the page's next snapshot has it.
                _ = try await api.send(
                    .post, "/api/users/runs/\(id)/positions", token: runner,
                    json: ["positions": [RunPositionTests.fix(90, at: startsAt.addingTimeInterval(20))]])
                let resumed = Self.parse(
                    try await session.wait(for: Self.probe) { value in
                        Self.parse(value)["status"] as? String == "Live" && (Self.parse(value)["rows"] as? [[String]])?.first?[2] == "0.09"
                    })
                #expect((resumed["rows"] as? [[String]])?.count == 1)
                #expect(try await session.evaluate("window.sameDocument === true", as: Bool.self))
            }
        }
    }
}
