import UntrustedXML

/// Reads GPX 1.0/1.1 as devices and tools write it — several tracks of which the first may be
/// empty (a Garmin track through GPSBabel starts with an empty "ACTIVE LOG"), several segments,
/// waypoints before the track, routes, a byte-order mark, namespace prefixes, heart rate in
/// Garmin's `TrackPointExtension` (`gpxtpx:hr`). Tracks are what was recorded (each track's
/// segments joined), routes what was planned.
package enum GPXReader {
    package static func read(_ bytes: [UInt8]) throws(ActivityFileError) -> ActivityDocument {
        var document = ActivityDocument(format: .gpx)
        var sawGPX = false
        var point: TrackPoint?
        var inTrack = false
        var field = ElementText()
        try DeviceXML.read(bytes) { event throws(ActivityFileError) in
            switch event {
            case .start(let name, let attributes):
                let local = DeviceXML.localName(name)
                switch local {
                case "gpx":
                    sawGPX = true
                    document.creator = attributes["creator"].flatMap(DeviceXML.label)
                case "trk":
                    document.tracks.append([])
                    inTrack = true
                case "rte":
                    document.routes.append([])
                    inTrack = false
                case "wpt":
                    document.waypoints += 1
                case "trkpt", "rtept":
                    guard let lat = DeviceXML.number(attributes["lat"]), let lon = DeviceXML.number(attributes["lon"]) else {
                        throw ActivityFileError(reason: "has a \(local) without numeric lat and lon attributes")
                    }
                    point = TrackPoint(latitude: lat, longitude: lon)
                case "ele", "time", "hr":
                    if point != nil { field.begin(local) }
                default:
                    break
                }
            case .text(let piece):
                field.append(piece)
            case .end(let name):
                let local = DeviceXML.localName(name)
                if let value = field.end(local) {
                    switch local {
                    case "ele": point?.elevation = DeviceXML.number(value)
                    case "time": point?.time = value
                    default: point?.heartRate = DeviceXML.number(value)
                    }
                } else if local == "trkpt", let finished = point, inTrack, !document.tracks.isEmpty {
                    document.tracks[document.tracks.count - 1].append(finished)
                    point = nil
                } else if local == "rtept", let finished = point, !document.routes.isEmpty {
                    document.routes[document.routes.count - 1].append(finished)
                    point = nil
                }
            }
        }
        guard sawGPX else { throw ActivityFileError(reason: "has no <gpx> root element") }
        return document
    }
}
