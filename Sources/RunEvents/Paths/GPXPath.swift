import Foundation
import UntrustedXML

/// Reads a course from GPX 1.0/1.1 (`application/gpx+xml`) with `XMLReader` (no entity is
/// declared, expanded or fetched): the track points (`trkpt`) of the first track that has any,
/// or else the route points (`rtept`) of the first route. A track without points is skipped: a
/// Garmin track converted by GPSBabel starts with an empty "ACTIVE LOG".
package enum GPXPath {
    package static func points(from data: Data) throws(PathError) -> [GeoPoint] {
        var sawGPX = false
        var tracks: [[GeoPoint]] = [], routes: [[GeoPoint]] = []
        do {
            try XMLReader.read(data) { event in
                guard case .start(let name, let attributes) = event else { return }
                let local = name.split(separator: ":").last.map(String.init) ?? name
                switch local {
                case "gpx": sawGPX = true
                case "trk": tracks.append([])
                case "rte": routes.append([])
                case "trkpt", "rtept":
                    guard let lat = attributes["lat"].flatMap(Double.init), let lon = attributes["lon"].flatMap(Double.init) else {
                        throw PathError(field: "body", reason: "a \(local) lacks numeric lat and lon attributes")
                    }
                    let point = GeoPoint(latitude: lat, longitude: lon)
                    if local == "trkpt", !tracks.isEmpty { tracks[tracks.count - 1].append(point) }
                    if local == "rtept", !routes.isEmpty { routes[routes.count - 1].append(point) }
                default: break
                }
            }
        } catch let error as PathError {
            throw error
        } catch let error as UntrustedXMLError {
            throw PathError(field: "body", reason: error.reason)
        } catch let error as XMLReadError {
            throw PathError(field: "body", reason: "is not well-formed XML (line \(error.line): \(error.reason))")
        } catch {
            throw PathError(field: "body", reason: "is not well-formed XML")
        }
        guard sawGPX else { throw PathError(field: "body", reason: "has no <gpx> root element") }
        guard let points = tracks.first(where: { !$0.isEmpty }) ?? routes.first(where: { !$0.isEmpty }) else {
            throw PathError(field: "body", reason: "has no track points (trkpt) or route points (rtept)")
        }
        return points
    }
}
