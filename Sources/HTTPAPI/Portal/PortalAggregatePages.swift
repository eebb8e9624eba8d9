import AccessManager
import Foundation
import HealthSharing
import Hummingbird

/// `/portal/aggregates`: the structured query form, the privacy budget before and after, and
/// each answer as a table and an SVG chart with its 95 % intervals as error bars.
struct PortalAggregatePages {
    let portal: PortalSite

    let aggregates: AggregateService

    func addRoutes(to group: some RouterMethods<AppRequestContext>) {
        group.get("aggregates") { _, context in
            try await formPage(context)
        }
        group.post("aggregates", use: askAggregate)
        group.get("aggregates/{aggregateId}", use: aggregatePage)
    }

    /// `POST /portal/aggregates`: asks the form's question, or shows the form again with what was wrong.
    @Sendable func askAggregate(_ request: Request, context: AppRequestContext) async throws -> Response {
        var typed: [String: Any] = [:]
        return try await portal.submit(
            request, context,
            showing: { context, values, status in
                try await formPage(context, values: values.merging(typed) { $1 }, status: status)
            }
        ) { form in
            typed = Self.typed(form)
            let party = try context.signedInParty()
            let before = try await aggregates.status(for: party)
            let spec = try Self.spec(form).spec(defaultEpsilon: aggregates.budget.defaultEpsilon, maximum: aggregates.budget.perQuery)
            let result = try await aggregates.run(spec, for: party)
            return try await resultPage(context, result, before: before, status: result.repeated ? .ok : .created)
        }
    }

    /// `GET /portal/aggregates/{aggregateId}`: one question and its answer.
    @Sendable func aggregatePage(_ request: Request, context: AppRequestContext) async throws -> Response {
        let id = try context.parameters.id("aggregateId", missing: AggregateError.notFound)
        return try await resultPage(context, try await aggregates.result(of: id, for: try context.signedInParty()), before: nil, status: .ok)
    }

    private func formPage(_ context: AppRequestContext, values: [String: Any] = [:], status: HTTPResponse.Status = .ok) async throws -> Response {
        let party = try context.signedInParty()
        let budget = try await aggregates.status(for: party)
        let past = try await aggregates.results(for: party, beforeId: nil, limit: 20)
        let chosen = values["chosen"] as? [String: String] ?? [:]
        let bands = values["bands"] as? Set<String> ?? []
        var all = values
        all["budget"] = Self.shown(budget)
        all["types"] = AggregateSubject.all.filter { AggregateDomain($0) != nil }.map {
            ["name": $0.rawValue, "selected": chosen["type"] == $0.rawValue]
        }
        all["statistics"] = ["count", "mean", "sum", "histogram", "quantiles"].map { ["name": $0, "selected": chosen["statistic"] == $0] }
        all["sexes"] = ["female", "male", "other"].map { ["name": $0, "selected": chosen["sex"] == $0] }
        all["dimensions"] = ["area", "ageBand", "sex", "day", "week"].map { ["name": $0, "selected": chosen["groupBy"] == $0] }
        all["ageBands"] = AgeBand.all.map { ["name": $0.label, "checked": bands.contains($0.label)] }
        all["past"] = past.map { PortalPages.values(of: AggregateResultBody($0.result)) }
        all["hasPast"] = !past.isEmpty
        return try await portal.page("portal-aggregates", title: "Aggregates", context, values: all, status: status)
    }

    private func resultPage(
        _ context: AppRequestContext, _ result: AggregateResult, before: BudgetStatus?, status: HTTPResponse.Status
    ) async throws -> Response {
        let after = try await aggregates.status(for: try context.signedInParty())
        let body = AggregateResultBody(result)
        let bars = AggregateChart.bars(statistic: body.spec.statistic, groups: body.groups)
        let unit: String? = AggregateSubject(rawValue: body.spec.type)?.unit.map {
            body.spec.statistic == "count" || body.spec.statistic == "histogram" ? "individuals" : $0
        }
        var values: [String: Any] = [
            "result": PortalPages.values(of: body),
            "after": Self.shown(after),
            "rows": bars.map {
                [
                    "label": $0.label, "value": $0.value.map(AggregateChart.short) ?? "", "low": $0.low.map(AggregateChart.short) ?? "",
                    "high": $0.high.map(AggregateChart.short) ?? "",
                ]
            },
            "chart": AggregateChart.svg(bars, title: "\(body.spec.statistic) of \(body.spec.type), \(body.spec.from) to \(body.spec.to)", unit: unit),
            "answered": !body.groups.isEmpty,
        ]
        if let before { values["before"] = Self.shown(before) }
        return try await portal.page("portal-aggregate", title: "Aggregate answer", context, values: values, status: status)
    }

    /// The budget as the API states it, its figures rounded for reading.
    private static func shown(_ status: BudgetStatus) -> [String: Any] {
        let body = BudgetBody(status)
        func window(_ window: BudgetBody.Window) -> [String: String] {
            [
                "limit": AggregateChart.short(window.limit), "spent": AggregateChart.short(window.spent),
                "remaining": AggregateChart.short(window.remaining),
            ]
        }
        return ["perQuery": AggregateChart.short(body.perQuery), "day": window(body.day), "days30": window(body.days30)]
    }

    /// The form as the API's query body: `areas` typed as a list (commas or spaces), age bands
    /// ticked, empty fields left out.
    static func spec(_ form: PortalForm) throws -> AggregateSpecForm {
        func text(_ name: String) -> String? { form[name].flatMap { $0.trimmingCharacters(in: .whitespaces).nonEmpty } }
        let areas = (form["areas"] ?? "").split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init)
        let bands = form.values("ageBands")
        var epsilon: Double?
        if let raw = text("epsilon") {
            guard let value = Double(raw) else { throw Problem.invalidField("epsilon", "must be a number between 0.01 and 1") }
            epsilon = value
        }
        return AggregateSpecForm(
            type: text("type"), statistic: text("statistic"), areas: areas.isEmpty ? nil : areas, ageBands: bands.isEmpty ? nil : bands,
            sex: text("sex"), from: text("from"), to: text("to"), groupBy: text("groupBy"), epsilon: epsilon
        )
    }

    /// What was typed, to show again beside the problems.
    private static func typed(_ form: PortalForm) -> [String: Any] {
        var chosen: [String: String] = [:]
        for name in ["type", "statistic", "sex", "groupBy"] { chosen[name] = form[name] }
        return [
            "chosen": chosen, "bands": Set(form.values("ageBands")),
            "areas": form["areas"] ?? "", "from": form["from"] ?? "", "to": form["to"] ?? "", "epsilon": form["epsilon"] ?? "",
        ]
    }
}

extension AggregateSpecForm {
    init(
        type: String?, statistic: String?, areas: [String]?, ageBands: [String]?, sex: String?, from: String?, to: String?, groupBy: String?,
        epsilon: Double?
    ) {
        self.type = type
        self.statistic = statistic
        self.areas = areas
        self.ageBands = ageBands
        self.sex = sex
        self.from = from
        self.to = to
        self.groupBy = groupBy
        self.epsilon = epsilon
    }
}
