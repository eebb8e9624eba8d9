import Foundation

/// The map tiles the Track4Run pages draw under the course (`MAP_TILE_URL`), and where the pages'
/// content security policy lets images come from.
struct MapTiles: Sendable, Equatable {
    /// `https://tile.openstreetmap.org/{z}/{x}/{y}.png`: Leaflet fills in the placeholders.
    let template: String
    /// The tiles' credit line (HTML, shown by Leaflet in the map's corner).
    let attribution: String
    /// The tiles' origin for `img-src` (`{s}.` subdomains as `*.`).
    let origin: String

    /// Nil unless `template` is an http(s) URL with `{z}`, `{x}` and `{y}`.
    init?(template: String, attribution: String) {
        guard ["{z}", "{x}", "{y}"].allSatisfy(template.contains),
            let components = URLComponents(
                string: template.replacingOccurrences(of: "{s}.", with: "s.")
                    .replacingOccurrences(of: "{", with: "").replacingOccurrences(of: "}", with: "")),
            let scheme = components.scheme?.lowercased(), scheme == "https" || scheme == "http", let host = components.host, !host.isEmpty
        else { return nil }
        self.template = template
        self.attribution = attribution
        let shownHost = template.contains("{s}.") ? "*." + host.dropFirst(2) : host
        origin = "\(scheme)://\(shownHost)" + (components.port.map { ":\($0)" } ?? "")
    }

    /// `map.tileURL` and `map.attribution` of the pages' templates.
    var templateValues: [String: String] { ["tileURL": template, "attribution": attribution] }
}
