import DeviceFiles

/// A course from a GPS file — GPX 1.0/1.1, TCX (an activity or a course) or FIT (a course or an
/// activity file) — read by `DeviceFiles`: the positions of the first recorded track that has any,
/// or else of the first planned route or course that has any.
package enum CoursePath {
    package static func points(from bytes: [UInt8], format: ActivityFileFormat) throws(PathError) -> [GeoPoint] {
        let document: ActivityDocument
        do {
            document = try format.read(bytes)
        } catch {
            throw PathError(field: "body", reason: error.reason)
        }
        guard let path = document.firstPath else {
            var found: [String] = []
            let points = document.tracks.joined().count + document.routes.joined().count
            if points > 0 { found.append("\(points) points without a position") }
            if document.waypoints > 0 {
                found.append("\(document.waypoints) \(format == .gpx ? "waypoints" : "course points"), which are places, not a path")
            }
            let wanted =
                switch format {
                case .gpx: "track points (trkpt) or route points (rtept)"
                case .tcx: "track points with a position (Trackpoint/Position)"
                case .fit: "record messages with a position"
                }
            throw PathError(field: "body", reason: "has no \(wanted)\(found.isEmpty ? "" : " (only \(found.joined(separator: " and ")))")")
        }
        return path.compactMap { point in point.position.map { GeoPoint(latitude: $0.latitude, longitude: $0.longitude) } }
    }
}
