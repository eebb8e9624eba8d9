import Data4HelpCore

/// Gives FIT messages their meaning for activities and courses (the FIT SDK's profile, the few
/// messages we use): `file_id` (is it an activity or a course, who made the device), `record`
/// (a point: position, altitude, heart rate, distance), `session` (the device's totals) and
/// `course_point` (a named place on a course). A course file's records are a planned route,
/// an activity's a recorded track.
package enum FITActivityReader {
    package static func read(_ bytes: [UInt8]) throws(ActivityFileError) -> ActivityDocument {
        var document = ActivityDocument(format: .fit)
        var points: [TrackPoint] = []
        var fileType: Int64?
        do {
            try FITDecoder.decode(bytes) { message throws(FITError) in
                switch message.global {
                case Message.fileID:
                    if fileType == nil { fileType = message.integer(0) }
                    if document.creator == nil { document.creator = creator(message) }
                case Message.record:
                    points.append(point(message))
                case Message.session:
                    document.summaries.append(summary(message))
                case Message.coursePoint:
                    document.waypoints += 1
                default:
                    break
                }
            }
        } catch {
            throw ActivityFileError(reason: error.reason)
        }
        guard fileType != nil else { throw ActivityFileError(reason: "is not valid FIT: it has no file_id message") }
        if fileType == FileType.course {
            document.routes = [points]
        } else {
            document.tracks = [points]
        }
        return document
    }

    /// Global message numbers (FIT SDK profile, `mesg_num`).
    private enum Message {
        static let fileID: UInt16 = 0
        static let session: UInt16 = 18
        static let record: UInt16 = 20
        static let coursePoint: UInt16 = 32
    }

    /// `file` enum values.
    private enum FileType {
        static let course: Int64 = 6
    }

    private static func point(_ message: FITMessage) -> TrackPoint {
        var point = TrackPoint()
        if let latitude = degrees(message.integer(0)), let longitude = degrees(message.integer(1)),
            abs(latitude) <= 90, abs(longitude) <= 180
        {
            point.latitude = latitude
            point.longitude = longitude
        }
        // enhanced_altitude (78, uint32) supersedes altitude (2, uint16); both metres × 5 + 500.
        point.elevation = message.number(78, scale: 5, offset: 500) ?? message.number(2, scale: 5, offset: 500)
        point.heartRate = message.number(3)
        point.distance = message.number(5, scale: 100)
        point.time = time(message.integer(253))
        return point
    }

    private static func summary(_ message: FITMessage) -> ActivitySummary {
        var summary = ActivitySummary(sport: sport(message.integer(5)))
        summary.start = time(message.integer(2)) ?? time(message.integer(253))
        summary.elapsedSeconds = message.number(7, scale: 1000)
        summary.distanceMetres = message.number(9, scale: 100)
        summary.energyKilocalories = message.number(11)
        summary.averageHeartRate = message.number(16)
        summary.maximumHeartRate = message.number(17)
        return summary
    }

    /// Semicircles (2³¹ to 180°) to degrees.
    private static func degrees(_ semicircles: Int64?) -> Double? {
        semicircles.map { Double($0) * (180 / 2_147_483_648) }
    }

    /// A FIT `date_time` as RFC 3339 UTC; values below 0x10000000 count from the device's power-on,
    /// not a date, and are dropped.
    private static func time(_ value: Int64?) -> String? {
        guard let value, value >= 0x1000_0000, value <= Int64(UInt32.max) else { return nil }
        return UTCTime.rfc3339(unixSeconds: value + FITDecoder.epochOffset)
    }

    /// The `sport` enum in the words summaries use.
    private static func sport(_ value: Int64?) -> String {
        switch value {
        case 1: "running"
        case 2: "cycling"
        case 5: "swimming"
        case 11: "walking"
        case 12: "crossCountrySkiing"
        case 13: "downhillSkiing"
        case 15: "rowing"
        case 17: "hiking"
        default: "other"
        }
    }

    /// The maker (and product number) of the device that wrote the file, as a source's name.
    private static func creator(_ message: FITMessage) -> String? {
        guard let manufacturer = message.integer(1) else { return nil }
        let makers: [Int64: String] = [
            1: "Garmin", 15: "Dynastream", 23: "Suunto", 32: "Wahoo", 123: "Polar", 255: "FIT development", 260: "Zwift", 265: "Strava", 294: "Coros",
        ]
        let maker = makers[manufacturer] ?? "FIT manufacturer \(manufacturer)"
        return message.integer(2).map { "\(maker) (product \($0))" } ?? maker
    }
}

/// RFC 3339 text of a UTC time, without Foundation's formatters (a FIT file has a time per second).
enum UTCTime {
    /// `unixSeconds` as `2026-11-20T07:02:11Z`; the caller keeps it within years 0–9999.
    static func rfc3339(unixSeconds: Int64) -> String {
        let (date, second) = CivilDate.split(unixSeconds: Int(truncatingIfNeeded: unixSeconds))
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let yearText = String(date.year)
        return String(repeating: "0", count: max(0, 4 - yearText.count)) + yearText
            + "-\(two(date.month))-\(two(date.day))T\(two(second / 3600)):\(two(second % 3600 / 60)):\(two(second % 60))Z"
    }
}
