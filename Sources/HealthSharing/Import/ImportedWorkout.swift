import Crypto
import DatabaseLink
import Foundation
import UntrustedXML

/// What one record of an imported file is to us.
package enum ImportedItem: Sendable, Equatable {
    /// A record of a type we store (a sample or a location fix), ready for the ingest rules.
    case sample(RawIngestItem)
    /// A record of a type we do not store (`HKQuantityTypeIdentifierFlightsClimbed`).
    case skipped(type: String)
    /// A record of a type we store that cannot be read (`reason` says why; `type` names it).
    case unreadable(type: String, reason: String)
    case workout(ImportedWorkout)
}

/// A workout as a file describes it: Apple Health's `Workout` element (with its
/// `WorkoutStatistics` and route files), and later GPX, TCX and FIT activities.
package struct ImportedWorkout: Sendable, Equatable {
    /// The activity in lower camel case: `running`, `cycling`, `traditionalStrengthTraining`
    /// (HealthKit's `HKWorkoutActivityType…` without its prefix).
    package var activity: String
    package var start: Date?
    package var end: Date?
    package var durationSeconds: Double?
    package var distanceMetres: Double?
    package var energyKilocalories: Double?
    package var averageHeartRate: Double?
    package var maximumHeartRate: Double?
    package var source: String?
    /// Route files inside the export (`/workout-routes/route_2023-05-01_8.30am.gpx`).
    package var routeFiles: [String] = []

    package init(activity: String) {
        self.activity = activity
    }

    /// From a `Workout` element's attributes; exports before iOS 16 carry the totals as
    /// attributes, later ones as `WorkoutStatistics` children (read by `add(statistics:)`).
    init(_ attributes: XMLAttributes) {
        let type = attributes["workoutActivityType"] ?? ""
        let name = type.hasPrefix("HKWorkoutActivityType") ? String(type.dropFirst("HKWorkoutActivityType".count)) : type
        activity = name.prefix(1).lowercased() + name.dropFirst()
        if activity.isEmpty { activity = "other" }
        start = attributes["startDate"].flatMap(AppleHealthDate.rfc3339).flatMap(RFC3339Timestamp.parse)
        end = attributes["endDate"].flatMap(AppleHealthDate.rfc3339).flatMap(RFC3339Timestamp.parse)
        source = attributes["sourceName"].map { String($0.prefix(200)) }
        if let duration = Self.number(attributes["duration"]) {
            switch attributes["durationUnit"] ?? "min" {
            case "s": durationSeconds = duration
            case "min": durationSeconds = duration * 60
            case "hr", "h": durationSeconds = duration * 3600
            default: break
            }
        }
        if let distance = Self.number(attributes["totalDistance"]), let unit = attributes["totalDistanceUnit"],
            let conversion = AppleHealthType.distances[unit]
        {
            distanceMetres = distance * conversion.factor
        }
        if let energy = Self.number(attributes["totalEnergyBurned"]) {
            energyKilocalories = Self.kilocalories(energy, unit: attributes["totalEnergyBurnedUnit"] ?? "kcal")
        }
        if durationSeconds == nil, let start, let end, end >= start { durationSeconds = end.timeIntervalSince(start) }
    }

    /// A `WorkoutStatistics` child: distance and energy sums, heart rate average and maximum.
    mutating func add(statistics attributes: XMLAttributes) {
        let unit = attributes["unit"] ?? ""
        switch attributes["type"] {
        case "HKQuantityTypeIdentifierDistanceWalkingRunning", "HKQuantityTypeIdentifierDistanceCycling", "HKQuantityTypeIdentifierDistanceSwimming":
            if let sum = Self.number(attributes["sum"]), let conversion = AppleHealthType.distances[unit] { distanceMetres = sum * conversion.factor }
        case "HKQuantityTypeIdentifierActiveEnergyBurned":
            if let sum = Self.number(attributes["sum"]) { energyKilocalories = Self.kilocalories(sum, unit: unit) }
        case "HKQuantityTypeIdentifierHeartRate" where unit == "count/min":
            averageHeartRate = Self.number(attributes["average"])
            maximumHeartRate = Self.number(attributes["maximum"])
        default:
            break
        }
    }

    /// The workout as stored: its id from its identity (activity, source, start, end), so the
    /// same workout imported twice is stored once; nil without a start, or an end or duration.
    var stored: NewWorkout? {
        guard let start else { return nil }
        let end = end ?? durationSeconds.flatMap { $0 >= 0 && $0 <= Self.longestSeconds ? start.addingTimeInterval($0) : nil }
        guard let end, end >= start, end.timeIntervalSince(start) <= Self.longestSeconds else { return nil }
        let name = String(activity.unicodeScalars.filter { ("a"..."z").contains($0) || ("A"..."Z").contains($0) }.prefix(64))
        let activity = name.isEmpty ? "other" : name
        let identity = ["workout", activity, source ?? "", String(start.timeIntervalSince1970), String(end.timeIntervalSince1970)]
        var workout = NewWorkout(clientId: ImportIdentity.digest(identity), activity: activity, start: start, end: end)
        // Figures a file got wrong (negative, infinite) are left out rather than refusing the workout.
        let figure = { (value: Double?) in value.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil } }
        workout.distanceMetres = figure(distanceMetres)
        workout.energyKilocalories = figure(energyKilocalories)
        workout.averageHeartRate = figure(averageHeartRate)
        workout.maximumHeartRate = figure(maximumHeartRate)
        workout.source = source
        return workout
    }

    /// The longest workout kept (the table's check): 30 days.
    static let longestSeconds: Double = 30 * 86_400

    private static func number(_ text: String?) -> Double? {
        guard let value = text.flatMap(Double.init), value.isFinite, value >= 0 else { return nil }
        return value
    }

    private static func kilocalories(_ value: Double, unit: String) -> Double? {
        switch unit {
        case "kcal", "Cal": value
        case "kJ": value / 4.184
        default: nil
        }
    }
}

/// Ids for imported records, derived from what makes a record the same one.
enum ImportIdentity {
    /// 128 bits of SHA-256 over `parts` (separated so that no two lists give the same text), hex,
    /// after `prefix`. One hash context fed part by part and one string written in place: an
    /// import computes one per record.
    static func digest(_ parts: [String], prefix: StaticString = "") -> String {
        var hash = SHA256()
        for var part in parts {
            part.withUTF8 { hash.update(bufferPointer: UnsafeRawBufferPointer($0)) }
            withUnsafeBytes(of: separator) { hash.update(bufferPointer: $0) }
        }
        let digest = hash.finalize()
        let hex: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: prefix.utf8CodeUnitCount + 32) { text in
            var count = 0
            prefix.withUTF8Buffer { for byte in $0 { text[count] = byte; count += 1 } }
            hex.withUTF8Buffer { digits in
                digest.withUnsafeBytes { bytes in
                    for byte in bytes.prefix(16) {
                        text[count] = digits[Int(byte >> 4)]
                        text[count + 1] = digits[Int(byte & 0x0F)]
                        count += 2
                    }
                }
            }
            return count
        }
    }

    private static let separator: UInt8 = 0x1F
}
