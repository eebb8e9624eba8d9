import Foundation
import UntrustedXML

/// A point of a GPX track or route as the file gives it.
package struct GPXPoint: Sendable, Equatable {
    package var latitude: Double
    package var longitude: Double
    /// `<ele>`, metres.
    package var elevation: Double?
    /// `<time>` as written (ISO 8601, usually UTC: `2016-06-17T23:41:03Z`).
    package var time: String?
    /// Garmin's `TrackPointExtension` `<gpxtpx:hr>` (or an `hr` without a prefix), beats a minute.
    package var heartRate: Double?
}

/// What a GPX 1.0/1.1 file holds: its tracks (each track's segments joined) and routes in file
/// order, empty ones included, and who wrote it.
package struct GPXDocument: Sendable, Equatable {
    package var creator: String?
    package var tracks: [[GPXPoint]] = []
    package var routes: [[GPXPoint]] = []
    package var waypoints = 0
}

/// Why a GPX file cannot be read, naming what was found.
package struct GPXError: Error, Equatable, Sendable {
    package let reason: String
}

/// Reads GPX as devices and tools write it — several tracks of which the first may be empty (a
/// Garmin track through GPSBabel starts with an empty "ACTIVE LOG"), several segments, waypoints
/// before the track, routes, a byte-order mark, namespace prefixes — with `XMLReader` (no entity
/// declared, expanded or fetched). Run courses and imports both read GPX here.
package enum GPXReader {
    package static func read(_ data: Data) throws(GPXError) -> GPXDocument {
        var document = GPXDocument()
        var sawGPX = false
        var point: GPXPoint?
        var inTrack = false
        var field: String?
        var text = ""
        do {
            try XMLReader.read(data) { event in
                switch event {
                case .start(let name, let attributes):
                    let local = localName(name)
                    switch local {
                    case "gpx":
                        sawGPX = true
                        document.creator = attributes["creator"]
                    case "trk":
                        document.tracks.append([])
                        inTrack = true
                    case "rte":
                        document.routes.append([])
                        inTrack = false
                    case "wpt":
                        document.waypoints += 1
                    case "trkpt", "rtept":
                        guard let lat = attributes["lat"].flatMap(Double.init), let lon = attributes["lon"].flatMap(Double.init),
                              lat.isFinite, lon.isFinite
                        else { throw GPXError(reason: "a \(local) lacks numeric lat and lon attributes") }
                        point = GPXPoint(latitude: lat, longitude: lon)
                    case "ele", "time", "hr":
                        if point != nil {
                            field = local
                            text = ""
                        }
                    default:
                        break
                    }
                case .text(let piece):
                    if field != nil { text += piece }
                case .end(let name):
                    let local = localName(name)
                    if local == field {
                        let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
                        switch local {
                        case "ele": point?.elevation = Double(value).flatMap { $0.isFinite ? $0 : nil }
                        case "time": point?.time = value
                        default: point?.heartRate = Double(value).flatMap { $0.isFinite ? $0 : nil }
                        }
                        field = nil
                    } else if local == "trkpt", let finished = point, inTrack, !document.tracks.isEmpty {
                        document.tracks[document.tracks.count - 1].append(finished)
                        point = nil
                    } else if local == "rtept", let finished = point, !document.routes.isEmpty {
                        document.routes[document.routes.count - 1].append(finished)
                        point = nil
                    }
                }
            }
        } catch let error as GPXError {
            throw error
        } catch let error as UntrustedXMLError {
            throw GPXError(reason: error.reason)
        } catch let error as XMLReadError {
            throw GPXError(reason: "is not well-formed XML (line \(error.line): \(error.reason))")
        } catch {
            throw GPXError(reason: "is not well-formed XML")
        }
        guard sawGPX else { throw GPXError(reason: "has no <gpx> root element") }
        return document
    }

    /// `gpxtpx:hr` → `hr`: namespaces are matched by local name.
    private static func localName(_ name: String) -> String {
        name.split(separator: ":").last.map(String.init) ?? name
    }
}
