import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation
import HealthSharing

/// Why a watch-rule request was refused.
package enum WatchRuleError: Error, Equatable {
    case ruleNotFound
    case alertNotFound
    case tooManyRules(maximum: Int)
    case unknownTemplate
}

/// The individual's watch rules (the Anomaly Detection module's settings) and the alerts they raised.
package struct WatchRuleService: Sendable {
    let rules: WatchRuleStore
    let alerts: WatchAlertStore
    let sos: SOSSettingsService

    /// Rules one individual may have.
    package static let maximumRules = 50

    package init(database: Database) {
        rules = WatchRuleStore(database: database)
        alerts = WatchAlertStore(database: database)
        sos = SOSSettingsService(database: database)
    }

    package func rules(of individual: IndividualID, limit: Int, before: Int64?) async throws -> [WatchRule] {
        try await rules.rules(individualId: individual.rowId, limit: limit, before: before)
    }

    package func rule(_ id: UUID, of individual: IndividualID) async throws -> WatchRule {
        guard let rule = try await rules.rule(id, individualId: individual.rowId) else { throw WatchRuleError.ruleNotFound }
        return rule
    }

    package func create(_ settings: WatchRuleSettings, for individual: IndividualID) async throws -> WatchRule {
        guard let rule = try await rules.insert(settings, individualId: individual.rowId, maximum: Self.maximumRules) else {
            throw WatchRuleError.tooManyRules(maximum: Self.maximumRules)
        }
        return rule
    }

    /// Adopts a template: a new rule of the individual's (enabled), or — the design's AutomatedSOS
    /// rule, an emergency — their enrolment in AutomatedSOS with its thresholds (its settings are
    /// `PUT /api/users/sos`'s, and so is the ambulance).
    package func adopt(template name: String, for individual: IndividualID) async throws -> TemplateAdoption {
        guard let template = WatchRuleTemplate.all.first(where: { $0.id == name }) else { throw WatchRuleError.unknownTemplate }
        if template.id == WatchRuleTemplate.automatedSOS.id {
            let (settings, updatedAt) = try await sos.enrol(individual, with: WatchRuleTemplate.automatedSOSThresholds)
            return .automatedSOS(settings, updatedAt: updatedAt)
        }
        return .rule(try await create(template.settings, for: individual))
    }

    package func replace(_ id: UUID, with settings: WatchRuleSettings, of individual: IndividualID) async throws -> WatchRule {
        guard let rule = try await rules.replace(id, with: settings, individualId: individual.rowId) else { throw WatchRuleError.ruleNotFound }
        return rule
    }

    package func delete(_ id: UUID, of individual: IndividualID) async throws {
        guard try await rules.delete(id, individualId: individual.rowId) else { throw WatchRuleError.ruleNotFound }
    }

    package func alerts(of individual: IndividualID, limit: Int, before: Int64?) async throws -> [WatchAlert] {
        try await alerts.alerts(individualId: individual.rowId, limit: limit, before: before)
    }

    package func alert(_ id: UUID, of individual: IndividualID) async throws -> WatchAlert {
        guard let alert = try await alerts.alert(id, individualId: individual.rowId) else { throw WatchRuleError.alertNotFound }
        return alert
    }

    package func acknowledge(_ id: UUID, by individual: IndividualID) async throws -> WatchAlert {
        guard let alert = try await alerts.acknowledge(id, individualId: individual.rowId) else { throw WatchRuleError.alertNotFound }
        return alert
    }

    /// The rule's bounds must be values the type can take (its physiological range).
    package static func bound(_ value: Double, for type: SampleType) throws(InvalidValue) -> Float {
        guard case .quantity(let unit, _, let range) = type.definition else { throw InvalidValue("\(type.rawValue) has no values to compare") }
        guard value.isFinite, range.contains(value) else {
            throw InvalidValue(
                "must be from \(range.lowerBound.formatted(.number.grouping(.never))) to \(range.upperBound.formatted(.number.grouping(.never))) \(unit)"
            )
        }
        return Float(value)
    }

    /// Minutes of a duration or window: 1 minute to 24 hours.
    package static func minutes(_ value: Int) throws(InvalidValue) -> Int64 {
        guard (1...1440).contains(value) else { throw InvalidValue("must be from 1 to 1440 minutes") }
        return Int64(value) * 60_000
    }

    /// Consecutive readings: 1 to 100.
    package static func readings(_ value: Int) throws(InvalidValue) -> Int {
        guard (1...100).contains(value) else { throw InvalidValue("must be from 1 to 100") }
        return value
    }

    /// The throttle in minutes: 0 (none) to a week.
    package static func throttle(_ value: Int) throws(InvalidValue) -> Int {
        guard (0...10_080).contains(value) else { throw InvalidValue("must be from 0 to 10080 minutes (a week)") }
        return value * 60
    }

    /// `HH:MM`, 00:00 to 23:59, as minutes after midnight.
    package static func timeOfDay(_ text: String) throws(InvalidValue) -> Int {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isASCII) }), let hour = Int(parts[0]), let minute = Int(parts[1]),
            (0...23).contains(hour), (0...59).contains(minute)
        else { throw InvalidValue("must be a time of day as HH:MM") }
        return hour * 60 + minute
    }

    /// A rule's name: 1 to 100 characters, no control characters.
    package static func name(_ text: String) throws(InvalidValue) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...100).contains(trimmed.count), !trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw InvalidValue("must be 1 to 100 characters")
        }
        return trimmed
    }
}

/// What adopting a template made.
package enum TemplateAdoption: Sendable {
    /// A new rule of the individual's.
    case rule(WatchRule)
    /// The design's AutomatedSOS rule: the individual's AutomatedSOS settings, now enrolled.
    case automatedSOS(SOSSettings, updatedAt: Date?)
}

/// Rules from the systems in the design's literature, adopted in one call.
package struct WatchRuleTemplate: Sendable {
    package let id: String
    package let summary: String
    package let settings: WatchRuleSettings

    package static let all: [WatchRuleTemplate] = [
        WatchRuleTemplate(
            id: "lowHeartRate", summary: "Heart rate below 40 bpm for 20 minutes (the digital-twin thesis's alert).",
            settings: WatchRuleSettings(
                name: "Low heart rate", typeCode: SampleType.heartRate.storageCode, comparison: .below(40),
                persistence: .sustained(milliseconds: 20 * 60_000), severity: .warning, template: "lowHeartRate")),
        WatchRuleTemplate(
            id: "glucoseOutOfRange", summary: "A blood glucose reading below 70 (hypo) or above 180 mg/dL (hyper), glUCModel's bounds.",
            settings: WatchRuleSettings(
                name: "Glucose out of range", typeCode: SampleType.bloodGlucose.storageCode, comparison: .outside(low: 70, high: 180),
                persistence: .consecutive(1), severity: .warning, throttleSeconds: 3 * 3600, template: "glucoseOutOfRange")),
        WatchRuleTemplate(
            id: "glucoseSevere", summary: "A blood glucose reading below 54 or above 240 mg/dL (severe hypo or hyper).",
            settings: WatchRuleSettings(
                name: "Glucose severely out of range", typeCode: SampleType.bloodGlucose.storageCode, comparison: .outside(low: 54, high: 240),
                persistence: .consecutive(1), severity: .urgent, throttleSeconds: 3600, template: "glucoseSevere")),
        WatchRuleTemplate(
            id: "lowOxygenSaturation", summary: "Oxygen saturation below 90 % for 5 minutes.",
            settings: WatchRuleSettings(
                name: "Low oxygen saturation", typeCode: SampleType.oxygenSaturation.storageCode, comparison: .below(90),
                persistence: .sustained(milliseconds: 5 * 60_000), severity: .urgent, throttleSeconds: 3600, template: "lowOxygenSaturation")),
        automatedSOS,
    ]

    /// The design's AutomatedSOS thresholds: 3 consecutive heart-rate readings below 40 bpm (the
    /// defaults of `PUT /api/users/sos`).
    package static let automatedSOSThresholds: SOSThresholds = {
        let defaults = SOSSettings()
        return SOSThresholds(
            minHeartRate: Float(defaults.minHeartRate), maxHeartRate: nil, minOxygenSaturation: nil,
            consecutiveReadings: defaults.consecutiveReadings,
            cancelWindowSeconds: defaults.cancelWindowSeconds)
    }()

    /// The design's AutomatedSOS rule, an emergency: adopting it enrols the individual in
    /// AutomatedSOS (an incident and an ambulance instead of an alert).
    package static let automatedSOS = WatchRuleTemplate(
        id: "automatedSOS",
        summary: "Three heart-rate readings in a row below 40 bpm call an ambulance to my location (AutomatedSOS, the design's rule).",
        settings: automatedSOSThresholds.heartRateRule)
}
