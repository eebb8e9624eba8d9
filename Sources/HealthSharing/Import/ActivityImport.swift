import DeviceFiles
import Foundation

/// An activity recorded by a watch or a phone app (GPX, TCX or FIT): every recorded point with a
/// time and a position becomes a location fix, its heart rate a heart-rate sample from the
/// file's creator, and the device's totals a workout. Routes and courses are plans, not
/// activities: their points are skipped.
package enum ActivityImport {
    /// The largest activity file read (held whole: a day's track at 1 Hz is about 10 MB of GPX).
    static let maximumBytes: Int64 = 64 << 20

    package static func items(_ document: ActivityDocument) -> [ImportedItem] {
        var items: [ImportedItem] = []
        // Ids keep GPX's prefix of the first release, so files imported then are not stored twice.
        let prefix = document.format.rawValue.lowercased() + ":"
        let source = document.creator
        for point in document.tracks.joined() {
            guard let time = point.time else {
                items.append(.unreadable(type: "track point", reason: "a track point has no time"))
                continue
            }
            if let position = point.position {
                var fix = RawIngestItem()
                fix.latitude = position.latitude
                fix.longitude = position.longitude
                fix.altitude = point.elevation
                fix.time = RawInstant(time)
                fix.id = prefix + ImportIdentity.digest(["fix", String(position.latitude), String(position.longitude), time])
                items.append(.sample(fix))
            }
            if let rate = point.heartRate {
                var sample = RawIngestItem()
                sample.type = .known(.heartRate)
                sample.value = .number(rate)
                sample.unit = "bpm"
                sample.start = RawInstant(time)
                sample.source = source
                sample.id = prefix + ImportIdentity.digest(["hr", time, String(rate), source ?? ""])
                items.append(.sample(sample))
            }
            if point.position == nil, point.heartRate == nil {
                items.append(.skipped(type: "track point without position or heart rate"))
            }
        }
        for summary in document.summaries { items.append(.workout(workout(summary, source: source))) }
        for _ in document.routes.joined() { items.append(.skipped(type: "route point (a planned route, not an activity)")) }
        return items
    }

    /// Whether the file recorded anything an import keeps.
    static func hasRecordedPoints(_ document: ActivityDocument) -> Bool {
        document.tracks.contains { !$0.isEmpty }
    }

    private static func workout(_ summary: ActivitySummary, source: String?) -> ImportedWorkout {
        var workout = ImportedWorkout(activity: summary.sport)
        workout.start = summary.start.flatMap(RFC3339Timestamp.parse)
        workout.durationSeconds = summary.elapsedSeconds
        if let start = workout.start, let seconds = summary.elapsedSeconds, seconds >= 0, seconds < 86_400 * 30 {
            workout.end = start.addingTimeInterval(seconds)
        }
        workout.distanceMetres = summary.distanceMetres
        workout.energyKilocalories = summary.energyKilocalories
        workout.averageHeartRate = summary.averageHeartRate
        workout.maximumHeartRate = summary.maximumHeartRate
        workout.source = source
        return workout
    }
}
