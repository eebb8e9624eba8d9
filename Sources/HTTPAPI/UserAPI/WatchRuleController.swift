import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird
import SOSManager

/// `/api/users/rules`, `/api/users/rule-templates`, `/api/users/alerts`: the caller's watch rules,
/// the templates to adopt, and the alerts the rules raised. Another individual's rule or alert
/// is answered 404.
struct WatchRuleController {
    let service: WatchRuleService
    let body: JSONBody

    func addRoutes(to group: some RouterMethods<IndividualRequestContext>) {
        group.get("rules", use: list)
        group.post("rules", use: create)
        group.get("rules/:ruleId", use: detail)
        group.patch("rules/:ruleId", use: update)
        group.delete("rules/:ruleId", use: delete)
        group.get("rule-templates", use: templates)
        group.post("rule-templates/:templateId/adopt", use: adopt)
        group.get("alerts", use: alerts)
        group.get("alerts/:alertId", use: alert)
        group.post("alerts/:alertId/acknowledge", use: acknowledge)
    }

    @Sendable func list(_ request: Request, context: IndividualRequestContext) async throws -> Page<WatchRuleBody> {
        let pagination = try KeysetPagination(request)
        let rows = try await service.rules(of: context.individual, limit: pagination.limit + 1, before: pagination.beforeId)
        return pagination.page(rows, id: \.sequence, item: WatchRuleBody.init)
    }

    @Sendable func create(_ request: Request, context: IndividualRequestContext) async throws -> EditedResponse<WatchRuleBody> {
        let form = try await body.decode(WatchRuleForm.self, from: request, context: context)
        let rule = try await service.create(try form.settings(over: nil), for: context.individual)
        return EditedResponse(status: .created, headers: [.location: "/api/users/rules/\(rule.publicId.wireString)"], response: WatchRuleBody(rule))
    }

    @Sendable func detail(_ request: Request, context: IndividualRequestContext) async throws -> WatchRuleBody {
        WatchRuleBody(try await service.rule(try Self.id("ruleId", context, .ruleNotFound), of: context.individual))
    }

    /// `PATCH`: the fields sent replace the rule's; `activeHours: null` removes its hours.
    @Sendable func update(_ request: Request, context: IndividualRequestContext) async throws -> WatchRuleBody {
        let id = try Self.id("ruleId", context, .ruleNotFound)
        let current = try await service.rule(id, of: context.individual)
        let form = try await body.decode(WatchRuleForm.self, from: request, context: context)
        return WatchRuleBody(try await service.replace(id, with: try form.settings(over: current.settings), of: context.individual))
    }

    @Sendable func delete(_ request: Request, context: IndividualRequestContext) async throws -> HTTPResponse.Status {
        try await service.delete(try Self.id("ruleId", context, .ruleNotFound), of: context.individual)
        return .noContent
    }

    @Sendable func templates(_ request: Request, context: IndividualRequestContext) async throws -> WatchRuleTemplateListBody {
        WatchRuleTemplateListBody()
    }

    /// `201` with the new rule; for the AutomatedSOS template, `200` with the AutomatedSOS
    /// settings now enrolled (`Content-Location: /api/users/sos`, where they are changed).
    @Sendable func adopt(_ request: Request, context: IndividualRequestContext) async throws -> Response {
        guard let name = context.parameters.get("templateId") else { throw WatchRuleError.unknownTemplate }
        switch try await service.adopt(template: name, for: context.individual) {
        case .rule(let rule):
            return try EditedResponse(
                status: .created, headers: [.location: "/api/users/rules/\(rule.publicId.wireString)"], response: WatchRuleBody(rule)
            )
            .response(from: request, context: context)
        case .automatedSOS(let settings, let updatedAt):
            return try EditedResponse(
                status: .ok, headers: [.contentLocation: "/api/users/sos"], response: SOSSettingsBody(settings, updatedAt: updatedAt)
            ).response(from: request, context: context)
        }
    }

    @Sendable func alerts(_ request: Request, context: IndividualRequestContext) async throws -> Page<WatchAlertBody> {
        let pagination = try KeysetPagination(request)
        let rows = try await service.alerts(of: context.individual, limit: pagination.limit + 1, before: pagination.beforeId)
        return pagination.page(rows, id: \.sequence, item: WatchAlertBody.init)
    }

    @Sendable func alert(_ request: Request, context: IndividualRequestContext) async throws -> WatchAlertBody {
        WatchAlertBody(try await service.alert(try Self.id("alertId", context, .alertNotFound), of: context.individual))
    }

    @Sendable func acknowledge(_ request: Request, context: IndividualRequestContext) async throws -> WatchAlertBody {
        WatchAlertBody(try await service.acknowledge(try Self.id("alertId", context, .alertNotFound), by: context.individual))
    }

    static func id(_ parameter: String, _ context: some RequestContext, _ missing: WatchRuleError) throws -> UUID {
        return try context.parameters.id(parameter, missing: missing)
    }
}

/// A rule as sent. For `POST` every field the rule needs; for `PATCH` the fields to change.
struct WatchRuleForm: Decodable {
    struct Hours: Codable {
        var from: String?
        var to: String?
    }

    var name: String?
    var type: String?
    var when: String?
    var value: Double?
    var low: Double?
    var high: Double?
    var over: String?
    var readings: Int?
    var minutes: Int?
    var activeHours: Hours?
    /// Whether `activeHours` was in the body (null removes the hours in a `PATCH`).
    var activeHoursSent = false
    var severity: String?
    var notifyDevice: Bool?
    var throttleMinutes: Int?
    var enabled: Bool?

    private enum CodingKeys: String, CodingKey {
        case name, type, when, value, low, high, over, readings, minutes, activeHours, severity, notifyDevice, throttleMinutes, enabled
    }

    /// A form from the portal's fields (nil where left empty). The portal's form always has the
    /// active hours' fields: left empty, the rule watches all day.
    init(
        name: String? = nil, type: String? = nil, when: String? = nil, value: Double? = nil, low: Double? = nil, high: Double? = nil,
        over: String? = nil, readings: Int? = nil, minutes: Int? = nil, severity: String? = nil, throttleMinutes: Int? = nil, enabled: Bool? = nil,
        activeHours: Hours?
    ) {
        (self.name, self.type, self.when, self.value, self.low, self.high) = (name, type, when, value, low, high)
        (self.over, self.readings, self.minutes, self.severity, self.throttleMinutes, self.enabled) = (
            over, readings, minutes, severity, throttleMinutes, enabled
        )
        (self.activeHours, activeHoursSent) = (activeHours, true)
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decodeIfPresent(String.self, forKey: .name)
        type = try container.decodeIfPresent(String.self, forKey: .type)
        when = try container.decodeIfPresent(String.self, forKey: .when)
        value = try container.decodeIfPresent(Double.self, forKey: .value)
        low = try container.decodeIfPresent(Double.self, forKey: .low)
        high = try container.decodeIfPresent(Double.self, forKey: .high)
        over = try container.decodeIfPresent(String.self, forKey: .over)
        readings = try container.decodeIfPresent(Int.self, forKey: .readings)
        minutes = try container.decodeIfPresent(Int.self, forKey: .minutes)
        activeHours = try container.decodeIfPresent(Hours.self, forKey: .activeHours)
        activeHoursSent = container.contains(.activeHours)
        severity = try container.decodeIfPresent(String.self, forKey: .severity)
        notifyDevice = try container.decodeIfPresent(Bool.self, forKey: .notifyDevice)
        throttleMinutes = try container.decodeIfPresent(Int.self, forKey: .throttleMinutes)
        enabled = try container.decodeIfPresent(Bool.self, forKey: .enabled)
    }

    /// The settings this form makes, over `current` (a `PATCH`) or from nothing (a `POST`: then
    /// `name`, `type`, `when` and its bounds, and `severity` are required).
    func settings(over current: WatchRuleSettings?) throws -> WatchRuleSettings {
        var fields = FieldValidator()
        let base = current.map(WatchRuleBody.Fields.init)
        let name =
            current == nil
            ? fields.required("name", name, WatchRuleService.name) : fields.optional("name", name, WatchRuleService.name) ?? base?.name
        let typeName = type ?? base?.type
        let sampleType = fields.required("type", typeName) { (raw: String) throws(InvalidValue) -> SampleType in
            guard let type = SampleType(rawValue: raw), case .quantity = type.definition else {
                throw InvalidValue("must be a quantity type such as heartRate or bloodGlucose")
            }
            return type
        }
        // The condition: when the comparison is sent, its bounds come with it; else the current ones stay.
        let comparisonSent = when != nil || value != nil || low != nil || high != nil || type != nil
        var comparison: WatchComparison? = comparisonSent ? nil : current?.comparison
        if comparisonSent, let sampleType {
            let kind = fields.required("when", when ?? base?.when) { (raw: String) throws(InvalidValue) -> String in
                guard ["below", "above", "outside"].contains(raw) else { throw InvalidValue("must be below, above or outside") }
                return raw
            }
            let bound = { (raw: Double) throws(InvalidValue) -> Float in try WatchRuleService.bound(raw, for: sampleType) }
            switch kind {
            case "below", "above":
                if let value = fields.required("value", value ?? base?.value, bound) { comparison = kind == "below" ? .below(value) : .above(value) }
            case "outside":
                let lower = fields.required("low", low ?? base?.low, bound)
                let upper = fields.required("high", high ?? base?.high, bound)
                if let lower, let upper {
                    if lower < upper { comparison = .outside(low: lower, high: upper) } else { fields.fail("high", "must be above low") }
                }
            default: break
            }
        }
        let overSent = over != nil || readings != nil || minutes != nil
        var persistence: WatchPersistence? = overSent ? nil : (current?.persistence ?? .consecutive(1))
        if overSent {
            let kind = fields.optional("over", over ?? base?.over ?? "consecutive") { (raw: String) throws(InvalidValue) -> String in
                guard raw == "consecutive" || raw == "sustained" || WatchAggregate(rawValue: raw) != nil else {
                    throw InvalidValue("must be consecutive, sustained, average, median, min or max")
                }
                return raw
            }
            switch kind {
            case "consecutive":
                if let count = fields.optional("readings", readings ?? base?.readings ?? 1, WatchRuleService.readings) {
                    persistence = .consecutive(count)
                }
            case let kind?:
                if let span = fields.required("minutes", minutes ?? base?.minutes, WatchRuleService.minutes) {
                    persistence =
                        kind == "sustained" ? .sustained(milliseconds: span) : WatchAggregate(rawValue: kind).map { .aggregate($0, windowMs: span) }
                }
            case nil: break
            }
        }
        var hours = activeHoursSent ? nil : current?.activeHours
        if let activeHours {
            let from = fields.required("activeHours.from", activeHours.from, WatchRuleService.timeOfDay)
            let to = fields.required("activeHours.to", activeHours.to, WatchRuleService.timeOfDay)
            if let from, let to {
                if from == to {
                    fields.fail("activeHours.to", "must differ from activeHours.from")
                } else {
                    hours = ActiveHours(fromMinute: from, toMinute: to)
                }
            }
        }
        let severity =
            fields.optional("severity", severity) { (raw: String) throws(InvalidValue) -> AlertSeverity in
                guard let severity = AlertSeverity(rawValue: raw), severity != .emergency else {
                    throw InvalidValue(
                        raw == "emergency"
                            ? "emergency is AutomatedSOS, which calls an ambulance: set it with PUT /api/users/sos"
                            : "must be info, warning or urgent")
                }
                return severity
            } ?? current?.severity
        if current == nil, severity == nil, self.severity == nil { fields.fail("severity", "is required") }
        let throttle = fields.optional("throttleMinutes", throttleMinutes, WatchRuleService.throttle) ?? current?.throttleSeconds ?? 6 * 3600
        try fields.finish()
        guard let name, let sampleType, let comparison, let persistence, let severity else {
            throw Problem.invalidField("when", "is required")  // unreachable: each missing part was reported above
        }
        return WatchRuleSettings(
            name: name, typeCode: sampleType.storageCode, comparison: comparison, persistence: persistence, activeHours: hours, severity: severity,
            notifyDevice: notifyDevice ?? current?.notifyDevice ?? true, throttleSeconds: throttle, enabled: enabled ?? current?.enabled ?? true,
            template: current?.template)
    }
}

/// A rule on the wire (`WatchRule` in the OpenAPI document).
struct WatchRuleBody: ResponseEncodable, Sendable {
    /// The settings as the wire's flat fields.
    struct Fields: Encodable, Sendable {
        var name: String
        var type: String?
        var when: String
        var value: Double?
        var low: Double?
        var high: Double?
        var over: String
        var readings: Int?
        var minutes: Int?
        var severity: String
        var throttleMinutes: Int
        var condition: String?

        init(_ settings: WatchRuleSettings) {
            func number(_ value: Float) -> Double { Double(value.description) ?? Double(value) }
            severity = settings.severity.rawValue
            throttleMinutes = settings.throttleSeconds / 60
            condition = SampleType(storageCode: settings.typeCode).map { WatchRuleWording.condition(of: settings, type: $0) }
            name = settings.name
            type = SampleType(storageCode: settings.typeCode)?.rawValue
            switch settings.comparison {
            case .below(let bound): (when, value, low, high) = ("below", number(bound), nil, nil)
            case .above(let bound): (when, value, low, high) = ("above", number(bound), nil, nil)
            case .outside(let lower, let upper): (when, value, low, high) = ("outside", nil, number(lower), number(upper))
            }
            switch settings.persistence {
            case .consecutive(let count): (over, readings, minutes) = ("consecutive", count, nil)
            case .sustained(let span): (over, readings, minutes) = ("sustained", nil, Int(span / 60_000))
            case .aggregate(let statistic, let span): (over, readings, minutes) = (statistic.rawValue, nil, Int(span / 60_000))
            }
        }

        private enum CodingKeys: String, CodingKey {
            case name, type, when, value, low, high, over, readings, minutes, severity, throttleMinutes, condition
        }

        /// Every key, null when absent (the contract requires them all).
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(type, forKey: .type)
            try container.encode(when, forKey: .when)
            try container.encode(value, forKey: .value)
            try container.encode(low, forKey: .low)
            try container.encode(high, forKey: .high)
            try container.encode(over, forKey: .over)
            try container.encode(readings, forKey: .readings)
            try container.encode(minutes, forKey: .minutes)
            try container.encode(severity, forKey: .severity)
            try container.encode(throttleMinutes, forKey: .throttleMinutes)
            try container.encode(condition, forKey: .condition)
        }
    }

    let rule: WatchRule

    init(_ rule: WatchRule) {
        self.rule = rule
    }

    private enum CodingKeys: String, CodingKey {
        case id, template, activeHours, notifyDevice, enabled, createdAt, updatedAt
    }

    /// The settings' fields (`Fields`, shared with a template's preview), then the stored rule's own.
    func encode(to encoder: any Encoder) throws {
        let settings = rule.settings
        try Fields(settings).encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(rule.publicId.wireString, forKey: .id)
        try container.encode(settings.template, forKey: .template)
        try container.encode(
            settings.activeHours.map { WatchRuleForm.Hours(from: Self.clock($0.fromMinute), to: Self.clock($0.toMinute)) }, forKey: .activeHours)
        try container.encode(settings.notifyDevice, forKey: .notifyDevice)
        try container.encode(settings.enabled, forKey: .enabled)
        try container.encode(WireFormat.timestamp(rule.createdAt), forKey: .createdAt)
        try container.encode(WireFormat.timestamp(rule.updatedAt), forKey: .updatedAt)
    }

    static func clock(_ minute: Int) -> String {
        let (hour, minutes) = minute.quotientAndRemainder(dividingBy: 60)
        return (hour < 10 ? "0" : "") + "\(hour):" + (minutes < 10 ? "0" : "") + "\(minutes)"
    }
}

/// `GET /api/users/rule-templates`.
struct WatchRuleTemplateListBody: ResponseEncodable {
    struct Template: Encodable {
        let id: String
        let summary: String
        /// The rule before it is adopted: its settings without id or times.
        let rule: WatchRuleBody.Fields
    }

    let items: [Template] = WatchRuleTemplate.all.map { Template(id: $0.id, summary: $0.summary, rule: WatchRuleBody.Fields($0.settings)) }
}

/// An alert on the wire (`WatchAlert` in the OpenAPI document).
struct WatchAlertBody: ResponseEncodable, Sendable {
    struct Reading: Encodable, Sendable {
        let time: String
        let value: Double
    }

    let id: String
    @Nullable var ruleId: String?
    let ruleName: String
    @Nullable var type: String?
    let severity: String
    let condition: String
    let episodeStart: String
    let episodeEnd: String
    let readings: [Reading]
    let raisedAt: String
    let updatedAt: String
    @Nullable var acknowledgedAt: String?

    init(_ alert: WatchAlert) {
        id = alert.publicId.wireString
        ruleId = alert.rulePublicId?.wireString
        ruleName = alert.ruleName
        type = SampleType(storageCode: alert.typeCode)?.rawValue
        severity = alert.severity.rawValue
        condition = alert.condition
        episodeStart = WireFormat.timestamp(milliseconds: alert.episodeFirstMs)
        episodeEnd = WireFormat.timestamp(milliseconds: alert.episodeLastMs)
        readings = alert.readings.map {
            Reading(time: WireFormat.timestamp(milliseconds: $0.timeMs), value: Double($0.value.description) ?? Double($0.value))
        }
        raisedAt = WireFormat.timestamp(alert.raisedAt)
        updatedAt = WireFormat.timestamp(alert.updatedAt)
        acknowledgedAt = alert.acknowledgedAt.map(WireFormat.timestamp)
    }
}
