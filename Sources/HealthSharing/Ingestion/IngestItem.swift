import Data4HelpCore
import DatabaseLink
import Foundation

/// One item of an upload as the client sent it, field by field, before any rule is applied.
/// The HTTP layer fills it from JSON; `fieldError` is set when a field had the wrong JSON type.
package struct RawIngestItem: Sendable, Equatable {
    package var id: String?
    package var type: RawSampleType?
    package var value: RawSampleValue?
    package var unit: String?
    package var start: RawInstant?
    package var end: RawInstant?
    package var source: String?
    package var latitude: Double?
    package var longitude: Double?
    package var accuracy: Double?
    package var altitude: Double?
    package var time: RawInstant?
    package var fieldError: String?

    package init() {}
}

/// An item's `type` as the client sent it: one of ours, or a name that is not (which the rules
/// refuse). The upload scanner tells ours from the body's bytes, so a type costs no string and no
/// second look-up by name.
package enum RawSampleType: Sendable, Equatable, ExpressibleByStringLiteral {
    case known(SampleType)
    case unknown(String)

    package init(_ name: String) {
        self = SampleType(rawValue: name).map { .known($0) } ?? .unknown(name)
    }

    package init(stringLiteral name: String) {
        self.init(name)
    }

    /// The name as sent.
    package var name: String {
        switch self {
        case .known(let type): type.rawValue
        case .unknown(let name): name
        }
    }
}

/// A time field as the client sent it, read when the field is read: the instant, or nil when the
/// text was not an RFC 3339 time with an offset. The upload scanner reads it from the body's
/// bytes, so an item's times cost no string (a 24-byte time is one allocation as a `String`,
/// and was parsed again from it by the rules: together 10 % of decoding an upload).
package struct RawInstant: Sendable, Equatable, ExpressibleByStringLiteral {
    /// Nil: not an RFC 3339 time with an offset.
    package let date: Date?

    package init(_ text: String) {
        date = RFC3339Timestamp.parse(text)
    }

    /// The time read from a string's UTF-8 bytes (nil when they are not an RFC 3339 time).
    package init(utf8 bytes: UnsafeRawBufferPointer) {
        date = RFC3339Timestamp.parse(utf8: bytes)
    }

    package init(stringLiteral text: String) {
        self.init(text)
    }
}

/// A health sample that passed every rule, its value in the canonical unit.
package struct NewSample: Sendable, Equatable {
    package let type: SampleType
    package let start: Date
    package let end: Date?
    package let value: Float
    package let key: Int64
    /// The device that produced it (`Apple Watch`), when the upload said.
    package let source: String?
}

/// A location fix that passed every rule.
package struct NewLocationFix: Sendable, Equatable {
    package let time: Date
    package let latitude: Double
    package let longitude: Double
    package let accuracy: Float?
    package let altitude: Float?
    package let key: Int64
}

/// A valid item: a sample or a fix.
package enum IngestItem: Sendable, Equatable {
    case sample(NewSample)
    case location(NewLocationFix)
}

/// The rules every uploaded item must meet.
package struct IngestRules: Sendable {
    /// Samples may be late by any amount (trackers sync days later) but not from before this.
    package var earliest = Date(timeIntervalSince1970: 946_684_800)  // 2000-01-01T00:00:00Z
    /// Tolerance for clocks running ahead; later than now + this is "in the future".
    package var futureTolerance: TimeInterval = 300
    /// The longest interval one sample may cover.
    package var longestInterval: TimeInterval = 24 * 3600

    package init() {}

    /// The item as a valid sample or fix, or why it is refused.
    package func validate(_ raw: RawIngestItem, now: Date) throws(SampleRejection) -> IngestItem {
        if let fieldError = raw.fieldError { throw SampleRejection(fieldError) }
        if let id = raw.id, id.isEmpty || id.utf8.count > 128 {
            throw SampleRejection("id must be 1 to 128 characters")
        }
        if raw.type != nil { return .sample(try sample(raw, now: now)) }
        if raw.latitude != nil || raw.longitude != nil { return .location(try fix(raw, now: now)) }
        throw SampleRejection("item is neither a health sample (type, value, start) nor a location fix (latitude, longitude, time)")
    }

    private func sample(_ raw: RawIngestItem, now: Date) throws(SampleRejection) -> NewSample {
        guard case .known(let type) = raw.type else {
            throw SampleRejection("type must be one of \(SampleType.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard let value = raw.value else { throw SampleRejection("value is required") }
        let canonical = try type.canonicalValue(value, unit: raw.unit)
        let start = try instant(raw.start, field: "start", now: now)
        var end: Date?
        if let rawEnd = raw.end {
            let parsed = try instant(rawEnd, field: "end", now: now)
            guard parsed >= start else { throw SampleRejection("end must not be before start") }
            guard type.isInterval || parsed == start else { throw SampleRejection("end is only for interval types such as stepCount") }
            guard parsed.timeIntervalSince(start) <= longestInterval else { throw SampleRejection("an interval may cover at most 24 hours") }
            end = type.isInterval ? parsed : nil
        }
        try checkSource(raw.source)
        let stored = Float(canonical)
        let key = raw.id.map(DedupeKey.forClientId) ?? DedupeKey.forSample(startMilliseconds: start.epochMilliseconds, value: stored)
        return NewSample(type: type, start: start, end: end, value: stored, key: key, source: raw.source)
    }

    /// Refuses a source name that is empty, over 200 characters or holds control characters.
    func checkSource(_ source: String?) throws(SampleRejection) {
        guard let source else { return }
        // Cheap first (an import checks millions of sources): at most 200 bytes of UTF-8 is at
        // most 200 characters; the control characters (Unicode's Cc) are U+0000–U+001F and
        // U+007F–U+009F, compared by value rather than looked up.
        guard !source.isEmpty, source.utf8.count <= 200 || source.count <= 200 else {
            throw SampleRejection("source must be 1 to 200 characters")
        }
        guard !source.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
            throw SampleRejection("source must not contain control characters")
        }
    }

    private func fix(_ raw: RawIngestItem, now: Date) throws(SampleRejection) -> NewLocationFix {
        guard let latitude = raw.latitude, (-90...90).contains(latitude) else { throw SampleRejection("latitude must be between -90 and 90") }
        guard let longitude = raw.longitude, (-180...180).contains(longitude) else { throw SampleRejection("longitude must be between -180 and 180") }
        if let accuracy = raw.accuracy, !(0...100_000).contains(accuracy) { throw SampleRejection("accuracy must be between 0 and 100000 m") }
        if let altitude = raw.altitude, !(-1_000...20_000).contains(altitude) { throw SampleRejection("altitude must be between -1000 and 20000 m") }
        let time = try instant(raw.time, field: "time", now: now)
        let key =
            raw.id.map(DedupeKey.forClientId)
            ?? DedupeKey.forFix(timeMilliseconds: time.epochMilliseconds, latitude: latitude, longitude: longitude)
        return NewLocationFix(
            time: time, latitude: latitude, longitude: longitude,
            accuracy: raw.accuracy.map(Float.init), altitude: raw.altitude.map(Float.init), key: key
        )
    }

    /// A time field checked: present, an RFC 3339 time, not before `earliest` nor in the future.
    func instant(_ raw: RawInstant?, field: String, now: Date) throws(SampleRejection) -> Date {
        guard let raw else { throw SampleRejection("\(field) is required") }
        guard let date = raw.date else {
            throw SampleRejection("\(field) must be an RFC 3339 time with an offset, such as 2026-11-21T08:30:00+01:00")
        }
        guard date >= earliest else { throw SampleRejection("\(field) is before 2000-01-01") }
        guard date.timeIntervalSince(now) <= futureTolerance else { throw SampleRejection("\(field) is in the future") }
        return date
    }
}
