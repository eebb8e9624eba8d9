import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import UntrustedXML

/// Reads a course from GPX 1.1 (`application/gpx+xml`) with Foundation's XML parser (libxml2):
/// the track points (`trkpt`) of the first track, or else the route points (`rtept`) of the
/// first route. Read through `UntrustedXML`: no entity is declared, expanded or fetched.
package enum GPXPath {
    package static func points(from data: Data) throws(PathError) -> [GeoPoint] {
        let reader = Reader()
        let parser: XMLParser
        do {
            parser = try UntrustedXML.parser(for: data)
        } catch {
            throw PathError(field: "body", reason: error.reason)
        }
        parser.delegate = reader
        guard parser.parse(), reader.failure == nil else {
            throw reader.failure ?? PathError(field: "body", reason: "is not well-formed GPX XML (line \(parser.lineNumber))")
        }
        guard reader.sawGPX else { throw PathError(field: "body", reason: "has no <gpx> root element") }
        let points = reader.track.isEmpty ? reader.route : reader.track
        guard !points.isEmpty else { throw PathError(field: "body", reason: "has no track points (trkpt) or route points (rtept)") }
        return points
    }

    /// Collects points; one parse only, used on the caller's task (never shared).
    private final class Reader: NSObject, XMLParserDelegate {
        var sawGPX = false
        var track: [GeoPoint] = []
        var route: [GeoPoint] = []
        var failure: PathError?
        private var tracksSeen = 0
        private var routesSeen = 0

        func parser(
            _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]
        ) {
            let local = name.split(separator: ":").last.map(String.init) ?? name
            switch local {
            case "gpx": sawGPX = true
            case "trk": tracksSeen += 1
            case "rte": routesSeen += 1
            case "trkpt" where tracksSeen == 1, "rtept" where routesSeen == 1:
                guard let lat = attributes["lat"].flatMap(Double.init), let lon = attributes["lon"].flatMap(Double.init) else {
                    failure = PathError(field: "body", reason: "a \(local) at line \(parser.lineNumber) lacks numeric lat and lon attributes")
                    parser.abortParsing()
                    return
                }
                if local == "trkpt" { track.append(GeoPoint(latitude: lat, longitude: lon)) } else { route.append(GeoPoint(latitude: lat, longitude: lon)) }
            default: break
            }
        }
    }
}
