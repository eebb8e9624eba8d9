import AccessManager
import Foundation

/// Someone to tell when an emergency is dispatched.
package struct EmergencyContact: Sendable, Equatable, Codable {
    package var name: String
    /// E.164, `+393331234567`.
    package var phone: String
    package var email: String?
    /// Where to POST a signed notification, if anywhere.
    package var webhookUrl: String?
    /// The key the notifications to `webhookUrl` are signed with (the individual passes it on to
    /// the contact); kept with the endpoint, not with the settings.
    package var webhookSecret: String?

    package init(name: String, phone: String, email: String?, webhookUrl: String?, webhookSecret: String? = nil) {
        self.name = name
        self.phone = phone
        self.email = email
        self.webhookUrl = webhookUrl
        self.webhookSecret = webhookSecret
    }

    private enum CodingKeys: String, CodingKey {
        case name, phone, email, webhookUrl
    }
}

/// An individual's AutomatedSOS settings, valid as a whole: the design's "custom threshold or
/// default value", N consecutive abnormal readings, a cancel window that keeps the dispatch
/// inside the five-second guarantee.
package struct SOSSettings: Sendable, Equatable {
    package static let maximumContacts = 5
    package static let maximumNotes = 2_000

    package var enabled = false
    package var minHeartRate = 40.0
    package var maxHeartRate: Double?
    package var minOxygenSaturation: Double?
    package var consecutiveReadings = 3
    package var cancelWindowSeconds = 3
    package var contacts: [EmergencyContact] = []
    package var medicalNotes = ""

    /// The defaults: not enrolled, 40 bpm, 3 readings, a 3-second cancel window.
    package init() {}

    /// Checks the combination; the fields one by one are checked by their parsers.
    package init(
        enabled: Bool, minHeartRate: Double, maxHeartRate: Double?, minOxygenSaturation: Double?, consecutiveReadings: Int,
        cancelWindowSeconds: Int, contacts: [EmergencyContact], medicalNotes: String
    ) throws(SOSError) {
        if let maxHeartRate, maxHeartRate <= minHeartRate {
            throw .invalid(field: "maxHeartRate", reason: "must be above minHeartRate (\(minHeartRate.formatted()))")
        }
        self.enabled = enabled
        self.minHeartRate = minHeartRate
        self.maxHeartRate = maxHeartRate
        self.minOxygenSaturation = minOxygenSaturation
        self.consecutiveReadings = consecutiveReadings
        self.cancelWindowSeconds = cancelWindowSeconds
        self.contacts = contacts
        self.medicalNotes = medicalNotes
    }

    // MARK: Field parsers (each names its rule)

    package static func heartRate(_ value: Double, in range: ClosedRange<Double>) throws(InvalidValue) -> Double {
        guard value.isFinite, range.contains(value) else {
            throw InvalidValue("must be from \(Int(range.lowerBound)) to \(Int(range.upperBound)) bpm")
        }
        return value
    }

    package static func oxygenSaturation(_ value: Double) throws(InvalidValue) -> Double {
        guard value.isFinite, (70...99).contains(value) else { throw InvalidValue("must be from 70 to 99 %") }
        return value
    }

    package static func consecutive(_ value: Int) throws(InvalidValue) -> Int {
        guard (1...10).contains(value) else { throw InvalidValue("must be from 1 to 10") }
        return value
    }

    package static func cancelWindow(_ value: Int) throws(InvalidValue) -> Int {
        guard (0...4).contains(value) else { throw InvalidValue("must be from 0 to 4 seconds (dispatch must leave within 5)") }
        return value
    }

    package static func notes(_ value: String) throws(InvalidValue) -> String {
        guard value.count <= maximumNotes else { throw InvalidValue("must be at most \(maximumNotes) characters") }
        guard !value.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\n" && $0 != "\t" }) else {
            throw InvalidValue("must not contain control characters")
        }
        return value
    }

    /// An international phone number: `+`, then 7–15 digits (E.164), spaces allowed and removed.
    package static func phone(_ raw: String) throws(InvalidValue) -> String {
        let compact = raw.filter { $0 != " " }
        guard compact.first == "+", compact.count >= 8, compact.count <= 16, compact.dropFirst().allSatisfy({ $0.isASCII && $0.isNumber }),
            compact.dropFirst().first != "0"
        else { throw InvalidValue("must be an international number such as +39 333 1234567") }
        return compact
    }
}

/// What an individual did wrong with AutomatedSOS.
package enum SOSError: Error, Equatable {
    case invalid(field: String, reason: String)
    /// No such incident, or not the asker's.
    case incidentNotFound
    /// The dispatch centre reported on an incident it was never called for, or acknowledged a
    /// resolved one.
    case reportConflict(String)
    /// A report whose signature was already used: a replay.
    case replayedReport
}
