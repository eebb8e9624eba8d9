import Data4HelpCore

/// A point a device recorded (a track) or a tool planned (a route or course): where, when, and
/// what was measured there. Indoor activities have points with no position.
package struct TrackPoint: Sendable, Equatable {
    package var latitude: Double?
    package var longitude: Double?
    /// Metres above sea level.
    package var elevation: Double?
    /// The time as the file gives it, ISO 8601 (`2016-06-17T23:41:03Z`); FIT times are written
    /// in that form in UTC.
    package var time: String?
    /// Beats a minute.
    package var heartRate: Double?
    /// Metres from the start, as the device measured them.
    package var distance: Double?

    package init(latitude: Double? = nil, longitude: Double? = nil) {
        self.latitude = latitude
        self.longitude = longitude
    }

    /// Latitude and longitude, when the point has both.
    package var position: (latitude: Double, longitude: Double)? {
        guard let latitude, let longitude else { return nil }
        return (latitude, longitude)
    }
}

/// An activity's totals as the device summed them (a FIT `session`, a TCX `Lap`'s sums).
package struct ActivitySummary: Sendable, Equatable {
    /// The sport as the file names it, lower camel case: `running`, `cycling`, `other`.
    package var sport: String
    package var start: String?
    package var elapsedSeconds: Double?
    package var distanceMetres: Double?
    package var energyKilocalories: Double?
    package var averageHeartRate: Double?
    package var maximumHeartRate: Double?

    package init(sport: String) {
        self.sport = sport
    }
}

/// What a GPS or activity file holds, whatever its format: the recorded tracks and the planned
/// routes in file order (empty ones included), named places, the device's totals and who wrote it.
/// Run courses take the first path with points; imports take the tracks as recorded data.
package struct ActivityDocument: Sendable, Equatable {
    package var format: ActivityFileFormat
    /// The device or program that wrote the file (GPX `creator`, TCX `Creator/Name`, FIT maker).
    package var creator: String?
    /// What was recorded: GPX `trk`, TCX `Activity`, a FIT activity's `record`s.
    package var tracks: [[TrackPoint]] = []
    /// What was planned: GPX `rte`, TCX `Course`, a FIT course file's `record`s.
    package var routes: [[TrackPoint]] = []
    /// Named places: GPX `wpt`, TCX `CoursePoint`, FIT `course_point`.
    package var waypoints = 0
    package var summaries: [ActivitySummary] = []

    package init(format: ActivityFileFormat) {
        self.format = format
    }

    /// The first path with points, recorded before planned: what a run course is drawn from.
    package var firstPath: [TrackPoint]? {
        tracks.first { $0.contains { $0.position != nil } } ?? routes.first { $0.contains { $0.position != nil } }
    }
}

/// Why a device file cannot be read, naming what was found.
package struct ActivityFileError: Error, Equatable, Sendable {
    package let reason: String

    package init(reason: String) {
        self.reason = reason
    }
}

/// The GPS and activity file formats we read, by the media type a client sends.
package enum ActivityFileFormat: String, Sendable, CaseIterable {
    case gpx = "GPX"
    case tcx = "TCX"
    case fit = "FIT"

    /// `application/gpx+xml`, `application/vnd.garmin.tcx+xml`, `application/vnd.ant.fit` (and
    /// the names tools also send); parameters such as `charset` ignored.
    package init?(contentType: String) {
        switch MediaType.essence(of: contentType) {
        case "application/gpx+xml", "application/gpx": self = .gpx
        case "application/vnd.garmin.tcx+xml", "application/tcx+xml": self = .tcx
        case "application/vnd.ant.fit", "application/fit": self = .fit
        default: return nil
        }
    }

    /// The media type this format is sent as.
    package var contentType: String {
        switch self {
        case .gpx: "application/gpx+xml"
        case .tcx: "application/vnd.garmin.tcx+xml"
        case .fit: "application/vnd.ant.fit"
        }
    }

    /// Reads a whole file of this format.
    package func read(_ bytes: [UInt8]) throws(ActivityFileError) -> ActivityDocument {
        switch self {
        case .gpx: try GPXReader.read(bytes)
        case .tcx: try TCXReader.read(bytes)
        case .fit: try FITActivityReader.read(bytes)
        }
    }
}
