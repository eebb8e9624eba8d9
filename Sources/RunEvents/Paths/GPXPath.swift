import DeviceFiles
import Foundation

/// A course from GPX 1.0/1.1 (`application/gpx+xml`), read by `GPXReader`: the track points of
/// the first track that has any, or else the route points of the first route that has any.
package enum GPXPath {
    package static func points(from data: Data) throws(PathError) -> [GeoPoint] {
        let document: GPXDocument
        do {
            document = try GPXReader.read(data)
        } catch {
            throw PathError(field: "body", reason: error.reason)
        }
        guard let points = document.tracks.first(where: { !$0.isEmpty }) ?? document.routes.first(where: { !$0.isEmpty }) else {
            let found = document.waypoints > 0 ? " (only \(document.waypoints) waypoints, which are places, not a path)" : ""
            throw PathError(field: "body", reason: "has no track points (trkpt) or route points (rtept)\(found)")
        }
        return points.map { GeoPoint(latitude: $0.latitude, longitude: $0.longitude) }
    }
}
