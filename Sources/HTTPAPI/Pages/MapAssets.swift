import Foundation
import Logging
import NIOCore

/// What the pages with a map need: Leaflet's files (Debian's `libjs-leaflet`, read at start and
/// served from `/assets/leaflet/`) and the tiles drawn under it. Without Leaflet there is no map
/// (the spectators' page draws the plain course); without tiles the map has no background.
struct MapAssets: Sendable {
    /// A file served as it is.
    struct File: Sendable {
        let type: String
        let bytes: ByteBuffer
    }

    /// Leaflet's files by path (`leaflet.js`, `images/layers.png`); empty when it is not installed.
    var leaflet: [String: File] = [:]
    /// Nil when `MAP_TILE_URL` is empty, or when there is no Leaflet to draw the tiles.
    var tiles: MapTiles?

    var hasLeaflet: Bool { !leaflet.isEmpty }

    /// Reads Leaflet from `LEAFLET_DIR` and takes the tiles of `MAP_TILE_URL`.
    static func load(_ configuration: AppConfiguration, logger: Logger) -> MapAssets {
        var assets = MapAssets(leaflet: leafletFiles(directory: configuration.leafletDirectory))
        if !configuration.mapTileURL.isEmpty {
            if assets.hasLeaflet {
                assets.tiles = MapTiles(template: configuration.mapTileURL, attribution: configuration.mapAttribution)
            } else {
                logger.warning("no Leaflet in LEAFLET_DIR (install libjs-leaflet): the Track4Run pages draw the plain course, without the map")
            }
        }
        return assets
    }

    /// Leaflet's script, style sheet and images from `directory`; empty unless both the script and
    /// the style sheet are there.
    private static func leafletFiles(directory: String) -> [String: File] {
        let files: [(String, String)] = [
            ("leaflet.js", "text/javascript; charset=utf-8"), ("leaflet.css", "text/css; charset=utf-8"),
            ("images/layers.png", "image/png"), ("images/layers-2x.png", "image/png"), ("images/marker-icon.png", "image/png"),
            ("images/marker-icon-2x.png", "image/png"), ("images/marker-shadow.png", "image/png"),
        ]
        var found: [String: File] = [:]
        for (file, type) in files {
            guard let data = FileManager.default.contents(atPath: (directory as NSString).appendingPathComponent(file)) else { continue }
            found[file] = File(type: type, bytes: ByteBuffer(bytes: data))
        }
        return found["leaflet.js"] != nil && found["leaflet.css"] != nil ? found : [:]
    }
}
