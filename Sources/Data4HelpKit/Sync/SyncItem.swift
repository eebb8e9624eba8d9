import Crypto
public import Foundation

/// One thing an app hands to the sync engine: a health sample or a location fix, with the id
/// that makes uploading it idempotent (the server stores an item once per type and id, however
/// often it is sent — after a retry, a crash, a reinstall that reads the same HealthKit data).
///
/// Times are kept to the millisecond, as the server keeps them.
public enum SyncItem: Codable, Sendable, Hashable {
    case sample(Sample)
    case location(Location)

    public struct Sample: Codable, Sendable, Hashable {
        /// A number in `unit`, or for `sleep` the stage (awake, light, deep, rem, asleep, inBed).
        public enum Value: Codable, Sendable, Hashable {
            case number(Double)
            case stage(String)
        }

        public var id: String
        public var type: Components.Schemas.SampleTypeName
        public var value: Value
        /// Nil: the type's canonical unit (see `GET /api/types`).
        public var unit: String?
        public var start: Date
        public var end: Date?
        /// The device (`Apple Watch`), kept and shown back; one source wins per period in summaries.
        public var source: String?

        /// A sample whose id is `id` — for HealthKit, the `HKSample`'s UUID — or, when nil, derived
        /// from what the sample is (type, source, start, end, value, unit), so that the same reading
        /// read twice from a file or a sensor gets the same id.
        public init(
            id: String? = nil, type: Components.Schemas.SampleTypeName, value: Value, unit: String? = nil, start: Date, end: Date? = nil,
            source: String? = nil
        ) {
            self.type = type
            self.value = value
            self.unit = unit
            self.start = start.truncatedToMilliseconds
            self.end = end?.truncatedToMilliseconds
            self.source = source
            self.id =
                id
                ?? SyncItem.derivedID([
                    "s", type.rawValue, source ?? "", self.start.millisecondsText, self.end?.millisecondsText ?? "", value.identityText, unit ?? "",
                ])
        }
    }

    public struct Location: Codable, Sendable, Hashable {
        public var id: String
        public var latitude: Double
        public var longitude: Double
        /// Metres.
        public var accuracy: Double?
        /// Metres.
        public var altitude: Double?
        public var time: Date

        public init(id: String? = nil, latitude: Double, longitude: Double, accuracy: Double? = nil, altitude: Double? = nil, time: Date) {
            self.latitude = latitude
            self.longitude = longitude
            self.accuracy = accuracy
            self.altitude = altitude
            self.time = time.truncatedToMilliseconds
            self.id = id ?? SyncItem.derivedID(["l", String(latitude), String(longitude), self.time.millisecondsText])
        }
    }

    public var id: String {
        switch self {
        case .sample(let sample): sample.id
        case .location(let location): location.id
        }
    }

    /// 32 hex digits of SHA-256 over the fields, each one length-prefixed so that no two
    /// different field lists share a text.
    static func derivedID(_ fields: [String]) -> String {
        let text = fields.map { "\($0.utf8.count):\($0)" }.joined()
        return SHA256.hash(data: Data(text.utf8)).prefix(16).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}

extension SyncItem.Sample.Value {
    var identityText: String {
        switch self {
        case .number(let number): "n" + String(number)
        case .stage(let stage): "t" + stage
        }
    }
}

extension Date {
    /// The same instant without what is below a millisecond (what the server keeps).
    var truncatedToMilliseconds: Date {
        let seconds = timeIntervalSince1970
        guard seconds.isFinite else { return self }
        return Date(timeIntervalSince1970: (seconds * 1000).rounded(.down) / 1000)
    }

    var millisecondsText: String {
        let milliseconds = (timeIntervalSince1970 * 1000).rounded(.down)
        // A finite Double prints exactly as an integer below 2^53 ms (285,000 years).
        return milliseconds.isFinite ? String(format: "%.0f", milliseconds) : "nan"
    }
}
