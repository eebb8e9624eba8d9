import AccessManager
import Foundation
import HealthSharing
import Hummingbird
import SOSManager

/// `GET`/`PUT /api/users/sos`: AutomatedSOS enrolment and settings.
struct SOSSettingsController {
    let settings: SOSSettingsService
    let body: JSONBody
    /// Contacts' webhook URLs follow the same address rules as every other webhook.
    let allowPrivateNetworks: Bool

    func addRoutes(to group: some RouterMethods<IndividualRequestContext>) {
        group.get("sos") { _, context in
            let (current, updatedAt) = try await settings.settings(of: context.individual)
            return SOSSettingsBody(current, updatedAt: updatedAt)
        }
        group.put("sos") { request, context in
            let form = try await body.decode(SOSSettingsForm.self, from: request, context: context)
            let (stored, updatedAt) = try await settings.replace(
                try form.settings(allowPrivateNetworks: allowPrivateNetworks), for: context.individual)
            return SOSSettingsBody(stored, updatedAt: updatedAt)
        }
    }
}

/// The settings as sent: the whole representation; a field left out takes its default.
/// (Encodable too: the portal shows a refused form again as it was typed.)
struct SOSSettingsForm: Codable {
    struct Contact: Codable {
        var name: String?
        var phone: String?
        var email: String?
        var webhookUrl: String?
    }

    var enabled: Bool?
    var minHeartRate: Double?
    var maxHeartRate: Double?
    var minOxygenSaturation: Double?
    var consecutiveReadings: Int?
    var cancelWindowSeconds: Int?
    var contacts: [Contact]?
    var medicalNotes: String?

    func settings(allowPrivateNetworks: Bool) throws -> SOSSettings {
        let defaults = SOSSettings()
        var fields = FieldValidator()
        let minimum = fields.optional("minHeartRate", minHeartRate) { (value: Double) throws(InvalidValue) in
            try SOSSettings.heartRate(value, in: 20...120)
        }
        let maximum = fields.optional("maxHeartRate", maxHeartRate) { (value: Double) throws(InvalidValue) in
            try SOSSettings.heartRate(value, in: 60...250)
        }
        let oxygen = fields.optional("minOxygenSaturation", minOxygenSaturation, SOSSettings.oxygenSaturation)
        let consecutive = fields.optional("consecutiveReadings", consecutiveReadings, SOSSettings.consecutive)
        let window = fields.optional("cancelWindowSeconds", cancelWindowSeconds, SOSSettings.cancelWindow)
        let notes = fields.optional("medicalNotes", medicalNotes, SOSSettings.notes)
        if (contacts?.count ?? 0) > SOSSettings.maximumContacts { fields.fail("contacts", "at most \(SOSSettings.maximumContacts) contacts") }
        var parsed: [EmergencyContact] = []
        for (index, contact) in (contacts ?? []).prefix(SOSSettings.maximumContacts).enumerated() {
            let prefix = "contacts[\(index)]."
            let name = fields.required(prefix + "name", contact.name, PersonName.init(parsing:))
            let phone = fields.required(prefix + "phone", contact.phone, SOSSettings.phone)
            let email = fields.optional(prefix + "email", contact.email, EmailAddress.init(parsing:))
            let url = fields.optional(prefix + "webhookUrl", contact.webhookUrl) { (text: String) throws(InvalidValue) -> String in
                switch Result(catching: { () throws(WebhookURLError) in try WebhookURL(parsing: text, allowPrivateNetworks: allowPrivateNetworks) }) {
                case .success(let url): return url.string
                case .failure(.invalid(let reason)): throw InvalidValue(reason)
                }
            }
            if let name, let phone {
                parsed.append(EmergencyContact(name: name.value, phone: phone, email: email?.value, webhookUrl: url))
            }
        }
        try fields.finish()
        return try SOSSettings(
            enabled: enabled ?? defaults.enabled, minHeartRate: minimum ?? defaults.minHeartRate, maxHeartRate: maximum,
            minOxygenSaturation: oxygen, consecutiveReadings: consecutive ?? defaults.consecutiveReadings,
            cancelWindowSeconds: window ?? defaults.cancelWindowSeconds, contacts: parsed, medicalNotes: notes ?? defaults.medicalNotes
        )
    }
}

struct SOSSettingsBody: ResponseEncodable {
    /// A contact as shown to its individual: with the signing secret of its webhook, if any.
    struct Contact: Encodable {
        let name: String
        let phone: String
        let email: String?
        let webhookUrl: String?
        let webhookSecret: String?

        private enum CodingKeys: String, CodingKey { case name, phone, email, webhookUrl, webhookSecret }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(phone, forKey: .phone)
            try container.encode(email, forKey: .email)
            try container.encode(webhookUrl, forKey: .webhookUrl)
            try container.encode(webhookSecret, forKey: .webhookSecret)
        }
    }

    let enabled: Bool
    let minHeartRate: Double
    let maxHeartRate: Double?
    let minOxygenSaturation: Double?
    let consecutiveReadings: Int
    let cancelWindowSeconds: Int
    let contacts: [Contact]
    let medicalNotes: String
    let updatedAt: Date?

    init(_ settings: SOSSettings, updatedAt: Date?) {
        enabled = settings.enabled
        minHeartRate = settings.minHeartRate
        maxHeartRate = settings.maxHeartRate
        minOxygenSaturation = settings.minOxygenSaturation
        consecutiveReadings = settings.consecutiveReadings
        cancelWindowSeconds = settings.cancelWindowSeconds
        contacts = settings.contacts.map {
            Contact(name: $0.name, phone: $0.phone, email: $0.email, webhookUrl: $0.webhookUrl, webhookSecret: $0.webhookSecret)
        }
        medicalNotes = settings.medicalNotes
        self.updatedAt = updatedAt
    }

    private enum CodingKeys: String, CodingKey {
        case enabled, minHeartRate, maxHeartRate, minOxygenSaturation, consecutiveReadings, cancelWindowSeconds, contacts, medicalNotes, updatedAt
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(enabled, forKey: .enabled)
        try container.encode(minHeartRate, forKey: .minHeartRate)
        try container.encode(maxHeartRate, forKey: .maxHeartRate)  // explicit null: no maximum
        try container.encode(minOxygenSaturation, forKey: .minOxygenSaturation)  // explicit null: not watched
        try container.encode(consecutiveReadings, forKey: .consecutiveReadings)
        try container.encode(cancelWindowSeconds, forKey: .cancelWindowSeconds)
        try container.encode(contacts, forKey: .contacts)
        try container.encode(medicalNotes, forKey: .medicalNotes)
        try container.encode(updatedAt, forKey: .updatedAt)
    }
}
