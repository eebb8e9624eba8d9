import DeviceFiles
import Foundation

/// An activity recorded as GPX (a watch's or a phone app's track): every track point with a time
/// becomes a location fix, and its heart rate (Garmin's `TrackPointExtension`) a heart-rate
/// sample from the file's `creator`. Routes are plans, not activities: their points are skipped.
enum GPXActivity {
    /// The largest GPX file read (held whole: a day's track at 1 Hz is about 10 MB).
    static let maximumBytes: Int64 = 64 << 20

    static func items(_ document: GPXDocument) -> [ImportedItem] {
        var items: [ImportedItem] = []
        let source = document.creator.map { String($0.prefix(200)) }.flatMap { $0.isEmpty ? nil : $0 }
        for point in document.tracks.joined() {
            guard let time = point.time else {
                items.append(.unreadable(type: "trkpt", reason: "a track point has no time"))
                continue
            }
            var fix = RawIngestItem()
            fix.latitude = point.latitude
            fix.longitude = point.longitude
            fix.altitude = point.elevation
            fix.time = time
            fix.id = "gpx:" + ImportIdentity.digest(["fix", String(point.latitude), String(point.longitude), time])
            items.append(.sample(fix))
            if let rate = point.heartRate {
                var sample = RawIngestItem()
                sample.type = SampleType.heartRate.rawValue
                sample.value = .number(rate)
                sample.unit = "bpm"
                sample.start = time
                sample.source = source
                sample.id = "gpx:" + ImportIdentity.digest(["hr", time, String(rate), source ?? ""])
                items.append(.sample(sample))
            }
        }
        for _ in document.routes.joined() { items.append(.skipped(type: "rtept (a planned route, not an activity)")) }
        return items
    }
}
