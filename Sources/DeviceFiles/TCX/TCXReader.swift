import UntrustedXML

/// Reads Garmin's Training Center XML (TCX v2): activities (`Activities/Activity`, also inside a
/// `MultiSportSession`) with their laps' totals and track points — position, altitude, distance
/// and `HeartRateBpm` — and courses (`Courses/Course`) with their track and course points. An
/// activity is a recorded track, a course a planned route; a track point with no position (an
/// indoor run, a pause) keeps its time and heart rate.
package enum TCXReader {
    package static func read(_ bytes: [UInt8]) throws(ActivityFileError) -> ActivityDocument {
        var state = State()
        try DeviceXML.read(bytes) { event throws(ActivityFileError) in try state.handle(event) }
        guard state.sawRoot else { throw ActivityFileError(reason: "has no <TrainingCenterDatabase> root element") }
        state.document.creator = state.device ?? state.author
        return state.document
    }

    private struct State {
        var document = ActivityDocument(format: .tcx)
        var sawRoot = false
        /// Local names of the open elements, outermost first.
        var open: [String] = []
        var point: TrackPoint?
        /// Where the current track's points go: an activity's track or a course's route.
        var inCourse = false
        var lapSeconds: Double?
        var lapAverageHeartRate: Double?
        var device: String?
        var author: String?
        var field = ElementText()

        mutating func handle(_ event: XMLReader.Event) throws(ActivityFileError) {
            switch event {
            case .start(let name, let attributes):
                let local = DeviceXML.localName(name)
                let parent = open.last
                open.append(local)
                switch local {
                case "TrainingCenterDatabase":
                    sawRoot = true
                case "Activity":
                    inCourse = false
                    document.tracks.append([])
                    document.summaries.append(ActivitySummary(sport: Self.sport(attributes["Sport"])))
                case "Course":
                    inCourse = true
                    document.routes.append([])
                case "CoursePoint":
                    document.waypoints += 1
                case "Lap" where !inCourse:
                    if let start = attributes["StartTime"], !document.summaries.isEmpty, document.summaries[document.summaries.count - 1].start == nil
                    {
                        document.summaries[document.summaries.count - 1].start = start
                    }
                    lapSeconds = nil
                    lapAverageHeartRate = nil
                case "Trackpoint":
                    point = TrackPoint()
                case "Time", "LatitudeDegrees", "LongitudeDegrees", "AltitudeMeters", "DistanceMeters":
                    // A point's fields; a lap's distance is the only one of them a summary takes.
                    if point != nil || (local == "DistanceMeters" && parent == "Lap" && !inCourse) { field.begin(local) }
                case "TotalTimeSeconds", "Calories":
                    if parent == "Lap", !inCourse { field.begin(local) }
                case "Id":
                    if parent == "Activity" { field.begin(local) }
                case "Value":
                    // A value belongs to its parent: `HeartRateBpm`, `AverageHeartRateBpm`…
                    if let parent { field.begin(parent) }
                case "Name":
                    let grandparent = open.dropLast(2).last
                    if parent == "Creator" || (parent == "Author" && grandparent == "TrainingCenterDatabase"), let parent { field.begin(parent) }
                default:
                    break
                }
            case .text(let piece):
                field.append(piece)
            case .end(let name):
                let local = DeviceXML.localName(name)
                open.removeLast()
                if local == "Value" || local == "Name" {
                    if let parent = open.last, let value = field.end(parent) { take(parent, value) }
                } else if let value = field.end(local) {
                    take(local, value)
                } else if local == "Trackpoint", let finished = point {
                    if inCourse, !document.routes.isEmpty {
                        document.routes[document.routes.count - 1].append(finished)
                    } else if !inCourse, !document.tracks.isEmpty {
                        document.tracks[document.tracks.count - 1].append(finished)
                    }
                    point = nil
                } else if local == "Lap", !inCourse, let seconds = lapSeconds, let rate = lapAverageHeartRate, !document.summaries.isEmpty {
                    // The activity's average heart rate: the laps' averages weighted by their time.
                    let index = document.summaries.count - 1
                    let before = document.summaries[index].averageHeartRate ?? 0
                    let total = document.summaries[index].elapsedSeconds ?? 0
                    if total > 0 {
                        document.summaries[index].averageHeartRate = (before * (total - seconds) + rate * seconds) / total
                    }
                }
            }
        }

        private mutating func take(_ element: String, _ value: String) {
            let index = document.summaries.count - 1
            switch element {
            case "Time": point?.time = value
            case "LatitudeDegrees": point?.latitude = DeviceXML.number(value)
            case "LongitudeDegrees": point?.longitude = DeviceXML.number(value)
            case "AltitudeMeters": point?.elevation = DeviceXML.number(value)
            case "HeartRateBpm": point?.heartRate = DeviceXML.number(value)
            case "DistanceMeters":
                if point != nil {
                    point?.distance = DeviceXML.number(value)
                } else if index >= 0, let metres = DeviceXML.number(value), metres >= 0 {
                    document.summaries[index].distanceMetres = (document.summaries[index].distanceMetres ?? 0) + metres
                }
            case "TotalTimeSeconds":
                if index >= 0, let seconds = DeviceXML.number(value), seconds >= 0 {
                    lapSeconds = seconds
                    document.summaries[index].elapsedSeconds = (document.summaries[index].elapsedSeconds ?? 0) + seconds
                }
            case "Calories":
                if index >= 0, let energy = DeviceXML.number(value), energy >= 0 {
                    document.summaries[index].energyKilocalories = (document.summaries[index].energyKilocalories ?? 0) + energy
                }
            case "AverageHeartRateBpm":
                lapAverageHeartRate = DeviceXML.number(value)
            case "MaximumHeartRateBpm":
                if index >= 0, let rate = DeviceXML.number(value) {
                    document.summaries[index].maximumHeartRate = max(document.summaries[index].maximumHeartRate ?? rate, rate)
                }
            case "Id":
                if index >= 0, document.summaries[index].start == nil { document.summaries[index].start = value }
            case "Creator":
                if device == nil { device = DeviceXML.label(value) }
            case "Author":
                author = DeviceXML.label(value)
            default:
                break
            }
        }

        /// TCX's sports (`Running`, `Biking`, `Other`) in the words summaries use.
        private static func sport(_ name: String?) -> String {
            switch name {
            case "Running": "running"
            case "Biking": "cycling"
            default: "other"
            }
        }
    }
}
