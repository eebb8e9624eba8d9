import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird
import SOSManager

/// `/me/rules` and `/me/alerts`: my watch rules (templates to adopt, a new rule with the API's
/// validation, change one, turn on or off, delete) and the alerts they raised (acknowledge).
struct MeRulePages {
    let site: PortalSite
    let rules: WatchRuleService

    func addRoutes(to group: some RouterMethods<AppRequestContext>) {
        group.get("rules") { _, context in try await rulesPage(context) }
        group.post("rules") { request, context in
            try await site.submit(request, context, keeping: Self.fieldNames, showing: rulesPage) { form in
                let ruleForm = try Self.form(form)
                _ = try await rules.create(try ruleForm.settings(over: nil), for: try context.signedInIndividual())
                return PortalForm.redirect(to: "/me/rules")
            }
        }
        group.get("rules/{ruleId}") { _, context in try await rulePage(context) }
        group.post("rules/{ruleId}") { request, context in
            try await site.submit(request, context, keeping: Self.fieldNames, showing: rulePage) { form in
                let individual = try context.signedInIndividual()
                let id = try WatchRuleController.id("ruleId", context, .ruleNotFound)
                var ruleForm = try Self.form(form)
                ruleForm.enabled = nil  // on or off stays as it is: the list turns it
                let current = try await rules.rule(id, of: individual).settings
                _ = try await rules.replace(id, with: try ruleForm.settings(over: current), of: individual)
                return PortalForm.redirect(to: "/me/rules")
            }
        }
        group.post("rules/templates/{templateId}/adopt") { request, context in
            try await site.submit(request, context, showing: rulesPage) { _ in
                switch try await rules.adopt(template: context.parameters.get("templateId") ?? "", for: try context.signedInIndividual()) {
                case .rule: return PortalForm.redirect(to: "/me/rules")
                case .automatedSOS: return PortalForm.redirect(to: "/me/sos")  // its contacts and cancel window are set there
                }
            }
        }
        group.post("rules/{ruleId}/enabled") { request, context in
            try await site.submit(request, context, showing: rulesPage) { form in
                let individual = try context.signedInIndividual()
                let id = try WatchRuleController.id("ruleId", context, .ruleNotFound)
                var settings = try await rules.rule(id, of: individual).settings
                settings.enabled = form["enabled"] == "true"
                _ = try await rules.replace(id, with: settings, of: individual)
                return PortalForm.redirect(to: "/me/rules")
            }
        }
        group.post("rules/{ruleId}/delete") { request, context in
            try await site.submit(request, context, showing: rulesPage) { _ in
                try await rules.delete(try WatchRuleController.id("ruleId", context, .ruleNotFound), of: try context.signedInIndividual())
                return PortalForm.redirect(to: "/me/rules")
            }
        }
        group.get("alerts") { _, context in try await alertsPage(context) }
        group.post("alerts/{alertId}/acknowledge") { request, context in
            try await site.submit(request, context, showing: alertsPage) { _ in
                _ = try await rules.acknowledge(try WatchRuleController.id("alertId", context, .alertNotFound), by: try context.signedInIndividual())
                return PortalForm.redirect(to: "/me/alerts")
            }
        }
    }

    private func rulesPage(
        _ context: AppRequestContext, values: [String: Any] = [:], status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let mine = try await rules.rules(of: try context.signedInIndividual(), limit: WatchRuleService.maximumRules, before: nil)
        var all = Self.formValues(values, typed: values["typed"] as? [String: String] ?? [:])
        all["rules"] = PortalPages.values(of: mine.map(WatchRuleBody.init))
        all["hasRules"] = !mine.isEmpty
        all["templates"] = PortalPages.values(of: WatchRuleTemplateListBody().items)
        return try await site.page("me-rules", title: "Watch rules", context, values: all, status: status)
    }

    /// `/me/rules/{ruleId}`: one rule's form, filled with the rule (or with what was typed, beside its problems).
    private func rulePage(
        _ context: AppRequestContext, values: [String: Any] = [:], status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let id = try WatchRuleController.id("ruleId", context, .ruleNotFound)
        let rule = try await rules.rule(id, of: try context.signedInIndividual())
        var all = Self.formValues(values, typed: values["typed"] as? [String: String] ?? Self.typed(rule.settings))
        all["ruleId"] = rule.publicId.wireString
        all["template"] = rule.settings.template != nil
        all["enabled"] = rule.settings.enabled
        return try await site.page("me-rule", title: rule.settings.name, context, values: all, status: status)
    }

    private func alertsPage(_ context: AppRequestContext, values: [String: Any] = [:], status: HTTPResponse.Status = .ok) async throws -> Response {
        let alerts = try await rules.alerts(of: try context.signedInIndividual(), limit: 200, before: nil)
        var all = values
        all["alerts"] = alerts.map { alert -> [String: Any] in
            [
                "id": alert.publicId.wireString, "raisedAt": PortalPages.shown(alert.raisedAt), "ruleName": alert.ruleName,
                "condition": alert.condition, "severity": alert.severity.rawValue,
                "latest": alert.readings.last.map { (Double($0.value.description) ?? Double($0.value)).formatted() } ?? "—",
                "acknowledged": alert.acknowledgedAt != nil,
            ]
        }
        all["hasAlerts"] = !alerts.isEmpty
        return try await site.page("me-alerts", title: "Alerts", context, values: all, status: status)
    }

    private static func unit(_ type: SampleType) -> String {
        if case .quantity(let unit, _, _) = type.definition { unit } else { "" }
    }

    /// The rule form's values: what to show in each field and which choice each list has selected.
    /// The API names the active hours' problems `activeHours.from`/`.to`; the form's fields are
    /// `activeFrom`/`activeTo`.
    private static func formValues(_ values: [String: Any], typed: [String: String]) -> [String: Any] {
        var all = values
        if var errors = values["errors"] as? [String: String] {
            errors["activeFrom"] = errors.removeValue(forKey: "activeHours.from")
            errors["activeTo"] = errors.removeValue(forKey: "activeHours.to")
            all["errors"] = errors
        }
        all["typed"] = typed
        func choices(_ field: String, _ options: [(value: String, label: String)], default fallback: String) -> [[String: Any]] {
            let chosen = typed[field]?.nonEmpty ?? fallback
            return options.map { ["value": $0.value, "label": $0.label, "selected": $0.value == chosen] }
        }
        let quantities = SampleType.allCases.filter { if case .quantity = $0.definition { true } else { false } }
        all["types"] = choices(
            "type", quantities.map { ($0.rawValue, $0.spokenTitle + " (\(unit($0)))") },
            default: SampleType.heartRate.rawValue)
        all["whens"] = choices("when", [("below", "below"), ("above", "above"), ("outside", "outside a range")], default: "below")
        all["overs"] = choices(
            "over",
            [
                ("consecutive", "readings in a row"), ("sustained", "minutes on end"), ("average", "the average over minutes"),
                ("median", "the median over minutes"), ("min", "the lowest over minutes"), ("max", "the highest over minutes"),
            ], default: "consecutive")
        all["severities"] = choices("severity", ["info", "warning", "urgent"].map { ($0, $0) }, default: "warning")
        return all
    }

    private static let fieldNames = [
        "name", "type", "when", "value", "low", "high", "over", "readings", "minutes", "activeFrom", "activeTo", "severity", "throttleMinutes",
    ]

    /// A stored rule as the form's fields.
    private static func typed(_ settings: WatchRuleSettings) -> [String: String] {
        let fields = WatchRuleBody.Fields(settings)
        func shown(_ number: Double?) -> String { number.map { Int(exactly: $0).map(String.init) ?? String($0) } ?? "" }
        return [
            "name": fields.name, "type": fields.type ?? "", "when": fields.when, "value": shown(fields.value), "low": shown(fields.low),
            "high": shown(fields.high), "over": fields.over, "readings": fields.readings.map(String.init) ?? "",
            "minutes": fields.minutes.map(String.init) ?? "", "severity": fields.severity, "throttleMinutes": String(fields.throttleMinutes),
            "activeFrom": settings.activeHours.map { WatchRuleBody.clock($0.fromMinute) } ?? "",
            "activeTo": settings.activeHours.map { WatchRuleBody.clock($0.toMinute) } ?? "",
        ]
    }

    /// The form as the API's rule body; empty fields are absent.
    static func form(_ form: PortalForm) throws -> WatchRuleForm {
        let when = form.text("when")
        let over = form.text("over")
        let (from, to) = (form.text("activeFrom"), form.text("activeTo"))
        return WatchRuleForm(
            name: form.text("name"), type: form.text("type"), when: when, value: when == "outside" ? nil : try form.number("value"),
            low: when == "outside" ? try form.number("low") : nil, high: when == "outside" ? try form.number("high") : nil, over: over,
            readings: over == "consecutive" ? try form.integer("readings") : nil, minutes: over == "consecutive" ? nil : try form.integer("minutes"),
            severity: form.text("severity"), throttleMinutes: try form.integer("throttleMinutes"), enabled: true,
            activeHours: from == nil && to == nil ? nil : WatchRuleForm.Hours(from: from, to: to))
    }
}
