import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird
import SOSManager

/// `/me/rules` and `/me/alerts`: my watch rules (templates to adopt, a new rule with the API's
/// validation, turn on or off, delete) and the alerts they raised (acknowledge).
struct MeRulePages {
    let site: PortalSite
    let rules: WatchRuleService

    func addRoutes(to group: some RouterMethods<AppRequestContext>) {
        group.get("rules") { _, context in try await rulesPage(context) }
        group.post("rules") { request, context in
            var typed: [String: Any] = [:]
            return try await site.submit(
                request, context,
                showing: { context, values, status in try await rulesPage(context, values: values.merging(typed) { $1 }, status: status) }
            ) { form in
                let ruleForm = try Self.form(form)
                typed = ["typed": Self.typed(form)]
                _ = try await rules.create(try ruleForm.settings(over: nil), for: try context.signedInIndividual())
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

    private func rulesPage(_ context: AppRequestContext, values: [String: Any] = [:], status: HTTPResponse.Status = .ok) async throws -> Response {
        let mine = try await rules.rules(of: try context.signedInIndividual(), limit: WatchRuleService.maximumRules, before: nil)
        var all = values
        all["rules"] = PortalPages.values(of: mine.map(WatchRuleBody.init))
        all["hasRules"] = !mine.isEmpty
        all["templates"] = PortalPages.values(of: WatchRuleTemplateListBody().items)
        all["types"] = SampleType.allCases.filter { if case .quantity = $0.definition { true } else { false } }.map { type in
            ["name": type.rawValue, "spoken": type.spokenName.prefix(1).uppercased() + type.spokenName.dropFirst(), "unit": Self.unit(type)]
        }
        return try await site.page("me-rules", title: "Watch rules", context, values: all, status: status)
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

    /// What was typed, shown again beside its problems.
    private static func typed(_ form: PortalForm) -> [String: Any] {
        var typed: [String: Any] = [:]
        for name in ["name", "value", "low", "high", "readings", "minutes", "throttleMinutes"] { typed[name] = form[name] ?? "" }
        return typed
    }

    /// The form as the API's rule body; empty fields are absent.
    static func form(_ form: PortalForm) throws -> WatchRuleForm {
        let when = form.text("when")
        let over = form.text("over")
        return WatchRuleForm(
            name: form.text("name"), type: form.text("type"), when: when, value: when == "outside" ? nil : try form.number("value"),
            low: when == "outside" ? try form.number("low") : nil, high: when == "outside" ? try form.number("high") : nil, over: over,
            readings: over == "consecutive" ? try form.integer("readings") : nil, minutes: over == "consecutive" ? nil : try form.integer("minutes"),
            severity: form.text("severity"), throttleMinutes: try form.integer("throttleMinutes"), enabled: true)
    }
}
