import Testing

@testable import HTTPAPI

@Suite("MAP_TILE_URL: which tile URLs are taken, and the origin the pages' CSP lets images come from")
struct MapTilesTests {
    @Test func theStandardTilesAndTheirOrigin() throws {
        let osm = try #require(MapTiles(template: "https://tile.openstreetmap.org/{z}/{x}/{y}.png", attribution: "©"))
        #expect(osm.origin == "https://tile.openstreetmap.org")
        let subdomains = try #require(MapTiles(template: "https://{s}.tile.example.org/{z}/{x}/{y}.png", attribution: ""))
        #expect(subdomains.origin == "https://*.tile.example.org")
        let local = try #require(MapTiles(template: "http://127.0.0.1:8081/tiles/{z}/{x}/{y}.png", attribution: ""))
        #expect(local.origin == "http://127.0.0.1:8081")
    }

    @Test(arguments: [
        "tile.openstreetmap.org/{z}/{x}/{y}.png", "ftp://tiles.example.org/{z}/{x}/{y}.png", "https://tiles.example.org/{z}/{x}.png",
        "https:///{z}/{x}/{y}.png", "javascript:alert(1)//{z}{x}{y}",
    ])
    func refused(_ template: String) {
        #expect(MapTiles(template: template, attribution: "") == nil)
    }
}
