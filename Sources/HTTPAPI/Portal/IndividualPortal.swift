import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird
import RunEvents
import SOSManager

/// `/me`: an individual's pages for when they are not on their phone — requests to decide
/// (accept, narrowing what is shared, or deny; block an organisation), grants to revoke, the
/// access log, whether they count in anonymised statistics, a chart of their own heart rate and steps, AutomatedSOS settings and incidents,
/// imports of files from their devices, and their workouts.
struct IndividualPortal {
    let site: PortalSite
    let accounts: IndividualAccounts
    let requests: AccessRequestService
    let accessLog: AccessLog
    let ownData: OwnDataReader
    let sosSettings: SOSSettingsService
    let sosIncidents: SOSIncidentService
    let imports: ImportService
    let workouts: WorkoutService
    let watchRules: WatchRuleService
    let care: CareService
    let runs: RunEventService
    /// Offers, share links and the privacy record (`MeSharingPages`).
    let offers: OfferService
    let directory: OrganisationDirectory
    let shareLinks: ShareLinkService
    let privacyRecord: PrivacyRecordService
    let shareBaseURL: String
    let insights: InsightService

    func addRoutes(to router: some RouterMethods<AppRequestContext>) {
        let me = site.routes(on: router).signedIn
        me.get { _, context in
            try await requestsPage(context)
        }
        me.post("requests/{requestId}/decision") { request, context in
            try await site.submit(request, context, showing: requestsPage) { form in
                let id = try AccessScopeFields.requestId(context.parameters)
                let types = form.values("types")
                let (accept, narrowing) = try DecisionForm(
                    decision: form["decision"], types: form["decision"] == "accept" && !types.isEmpty ? types : nil,
                    dataFrom: form.instant("dataFrom", endOfDay: false), dataTo: form.instant("dataTo", endOfDay: true),
                    accessUntil: form.instant("accessUntil", endOfDay: true)
                ).validated()
                _ = try await requests.decide(try context.signedInIndividual(), id: id, accept: accept, narrowing: narrowing)
                return PortalForm.redirect(to: "/me")
            }
        }
        me.post("requests/{requestId}/change") { request, context in
            try await site.submit(request, context, showing: requestsPage) { form in
                let id = try AccessScopeFields.requestId(context.parameters)
                // Unticking "new data as it is produced" turns the subscription off; it is shown
                // only while it is on.
                let change = try GrantChangeForm(
                    types: form.values("types"), dataFrom: form.instant("dataFrom", endOfDay: false), dataTo: form.instant("dataTo", endOfDay: true),
                    accessUntil: form.instant("accessUntil", endOfDay: true),
                    subscribe: form["subscriptionShown"] == "yes" && form["subscribe"] == nil ? false : nil,
                    confirmExtension: form["confirmExtension"] == "yes"
                ).validated()
                _ = try await requests.change(try context.signedInIndividual(), id: id, change: change)
                return PortalForm.redirect(to: "/me")
            }
        }
        // In or out of every aggregate query's population (the API's `aggregatesOptOut`).
        me.post("aggregates") { request, context in
            try await site.submit(request, context, showing: requestsPage) { form in
                var fields = FieldValidator()
                var change = IndividualProfileChange()
                change.aggregatesOptOut = fields.required("optOut", form["optOut"]) { (raw: String) throws(InvalidValue) -> Bool in
                    switch raw {
                    case "yes": return true
                    case "no": return false
                    default: throw InvalidValue("must be yes or no")
                    }
                }
                try fields.finish()
                _ = try await accounts.update(try context.signedInIndividual(), signedInWith: try context.signedIn().credential, with: change)
                return PortalForm.redirect(to: form["return"] == "privacy" ? "/me/privacy" : "/me")
            }
        }
        me.post("requests/{requestId}/revoke") { request, context in
            try await site.submit(request, context, showing: requestsPage) { _ in
                _ = try await requests.revoke(try context.signedInIndividual(), id: try AccessScopeFields.requestId(context.parameters))
                return PortalForm.redirect(to: "/me")
            }
        }
        me.post("blocked/{organisationId}") { request, context in
            try await site.submit(request, context, showing: requestsPage) { _ in
                let organisation = try context.parameters.id("organisationId", missing: AccessRequestError.notFound)
                try await requests.block(try context.signedInIndividual(), organisation: organisation)
                return PortalForm.redirect(to: "/me")
            }
        }
        me.post("blocked/{organisationId}/unblock") { request, context in
            try await site.submit(request, context, showing: requestsPage) { _ in
                let organisation = try context.parameters.id("organisationId", missing: AccessRequestError.notFound)
                try await requests.unblock(try context.signedInIndividual(), organisation: organisation)
                return PortalForm.redirect(to: "/me")
            }
        }
        me.get("access-log") { _, context in
            let entries = try await accessLog.entries(for: try context.signedInIndividual(), beforeId: nil, limit: 200)
            return try await site.page(
                "me-access-log", title: "Access log", context,
                values: [
                    "entries": PortalPages.values(of: entries.map(DisclosureBody.init)), "hasEntries": !entries.isEmpty,
                ])
        }
        MeHealthPage(site: site, ownData: ownData).addRoutes(to: me)
        MeSOSPages(site: site, settings: sosSettings, incidents: sosIncidents).addRoutes(to: me)
        MeImportPages(site: site, imports: imports).addRoutes(to: me)
        MeWorkoutPages(site: site, workouts: workouts, insights: insights).addRoutes(to: me)
        MeRulePages(site: site, rules: watchRules).addRoutes(to: me)
        MeCarePages(site: site, care: care, rules: watchRules).addRoutes(to: me)
        MeRunPages(site: site, runs: runs).addRoutes(to: me)
        MeSharingPages(
            site: site, offers: offers, directory: directory, shareLinks: shareLinks, privacy: privacyRecord, accounts: accounts,
            baseURL: shareBaseURL
        ).addRoutes(to: me)
    }

    private func requestsPage(_ context: AppRequestContext, values: [String: Any] = [:], status: HTTPResponse.Status = .ok) async throws -> Response {
        let individual = try context.signedInIndividual()
        let all = try await requests.requests(for: individual, status: nil, beforeId: nil, limit: 200)
        /// The request as the page shows it; with `kinds`, the boxes of its form (asked, or granted).
        func shown(_ request: AccessRequest, kinds: [DataKind]? = nil) -> Any {
            var values = PortalPages.values(of: AccessRequestBody(request, for: .individual)) as? [String: Any] ?? [:]
            values["offered"] = request.record.offered
            if let kinds { values["kinds"] = kinds.map { ["name": $0.wireName] } }
            return values
        }
        let pending = all.filter { $0.record.status == .pending }
        let granted = all.filter { $0.record.status == .granted }
        let closed = all.filter { !$0.record.status.isOpen }
        let blocked = try await requests.blocked(by: individual)
        var page = values
        page["pending"] = pending.map { shown($0, kinds: $0.asked.kinds) }
        page["hasPending"] = !pending.isEmpty
        page["granted"] = granted.map { shown($0, kinds: $0.granted?.kinds ?? []) }
        page["hasGranted"] = !granted.isEmpty
        page["closed"] = closed.map { shown($0) }
        page["hasClosed"] = !closed.isEmpty
        page["blocked"] = blocked.map { ["id": $0.organisation.wireString, "name": $0.name, "since": PortalPages.shown($0.since)] }
        page["hasBlocked"] = !blocked.isEmpty
        page["aggregatesOptOut"] = try await accounts.profile(of: individual).aggregatesOptOut
        return try await site.page("me-requests", title: "Requests for my data", context, values: page, status: status)
    }
}

/// `/me/health`: my heart rate (mean) and steps (total) over the last day, by hour, or the last
/// week, by day — from the same summaries as `GET /api/users/data/summary` — and, when I have
/// glucose readings in the period, their chart with my range shaded and the figures of
/// `GET /api/users/data/glucose`.
struct MeHealthPage {
    let site: PortalSite
    let ownData: OwnDataReader

    func addRoutes(to group: some RouterMethods<AppRequestContext>) {
        group.get("health", use: healthPage)
    }

    /// `GET /me/health`: the individual's data, charted.
    @Sendable func healthPage(_ request: Request, context: AppRequestContext) async throws -> Response {
        let week = request.uri.queryParameters["period"] == "week"
        let bucket: SummaryBucket = week ? .day : .hour
        let to = Date(), from = to.addingTimeInterval(week ? -7 * 86_400 : -86_400)
        let individual = try context.signedInIndividual()
        var charts: [[String: Any]] = []
        for (type, statistic, title) in [(SampleType.heartRate, "mean", "Heart rate (mean)"), (.stepCount, "sum", "Steps (total)")] {
            let body = SummaryBody(try await ownData.summary(of: individual, type: type, bucket: bucket, from: from, to: to))
            let bars = body.items.map { item in
                AggregateChart.Bar(
                    label: Self.label(item.start, week: week), value: statistic == "sum" ? (item.sum ?? item.mean * Double(item.count)) : item.mean)
            }
            charts.append([
                "title": title, "svg": AggregateChart.svg(bars, title: "\(title), \(week ? "last 7 days" : "last 24 hours")", unit: body.unit),
                "empty": bars.isEmpty,
            ])
        }
        var values: [String: Any] = ["charts": charts, "week": week]
        let (report, readings) = try await ownData.glucose(of: individual, from: from, to: to, range: nil)
        if !readings.isEmpty {
            values["glucose"] = Self.glucose(report, readings, from: from, to: to, week: week)
        }
        return try await site.page("me-health", title: "My data", context, values: values)
    }

    /// The glucose section: the chart, range shaded, and the consensus figures beside it.
    static func glucose(_ report: GlucoseReport, _ readings: [(timeMs: Int64, value: Float)], from: Date, to: Date, week: Bool) -> [String: Any] {
        let (fromMs, toMs) = (from.epochMilliseconds, to.epochMilliseconds)
        let step: Int64 = week ? 86_400_000 : 6 * 3_600_000
        let ticks = (0...(week ? 7 : 4)).map { index -> (timeMs: Int64, label: String) in
            let ago = Int64(index) * step
            return (toMs - ago, index == 0 ? "now" : week ? "\(index) d ago" : "\(index * 6) h ago")
        }
        func percent(_ share: Double?) -> String { share.map { $0.formatted(.number.precision(.fractionLength(0...1))) } ?? "–" }
        func whole(_ value: Double?) -> String { value.map { $0.formatted(.number.precision(.fractionLength(0)).grouping(.never)) } ?? "–" }
        let source =
            switch report.boundsSource {
            case .rule: "from my glucose rule"
            case .request, .standard: "the consensus target"
            }
        return [
            "svg": GlucoseChart.svg(readings, fromMs: fromMs, toMs: toMs, low: report.low, high: report.high, ticks: ticks),
            "range": "\(whole(report.low))–\(whole(report.high))", "rangeSource": source, "readings": report.readings,
            "inRange": percent(report.inRange), "belowRange": percent(report.belowRange), "veryLow": percent(report.veryLow),
            "aboveRange": percent(report.aboveRange), "veryHigh": percent(report.veryHigh), "hypoEpisodes": report.hypoEpisodes,
            "mean": whole(report.mean), "cv": percent(report.coefficientOfVariation),
            "gmi": report.glucoseManagementIndicator.map { $0.formatted(.number.precision(.fractionLength(1))) } ?? "–",
        ]
    }

    /// `HH:00` for an hour, `MM-DD` for a day (the bucket starts are in the individual's time zone).
    private static func label(_ start: String, week: Bool) -> String {
        let parts = start.split(separator: "T")
        guard parts.count == 2 else { return start }
        return week ? String(parts[0].dropFirst(5)) : String(parts[1].prefix(5))
    }
}

/// `/me/sos`: AutomatedSOS settings (the API's validation) and incidents, with cancel.
struct MeSOSPages {
    let site: PortalSite

    let settings: SOSSettingsService
    let incidents: SOSIncidentService

    func addRoutes(to group: some RouterMethods<AppRequestContext>) {
        group.get("sos") { _, context in
            try await page(context)
        }
        group.post("sos") { request, context in
            var typed: [String: Any] = [:]
            return try await site.submit(
                request, context,
                showing: { context, values, status in
                    try await page(context, values: values.merging(typed) { $1 }, status: status)
                }
            ) { form in
                let settingsForm = try Self.form(form)
                typed = ["typed": PortalPages.values(of: settingsForm)]
                _ = try await settings.replace(
                    try settingsForm.settings(allowPrivateNetworks: site.allowPrivateWebhooks), for: try context.signedInIndividual())
                return PortalForm.redirect(to: "/me/sos")
            }
        }
        group.post("sos/incidents/{incidentId}/cancel") { request, context in
            try await site.submit(request, context, showing: page) { _ in
                _ = try await incidents.cancel(try SOSIncidentController.incidentId(context), by: try context.signedInIndividual())
                return PortalForm.redirect(to: "/me/sos")
            }
        }
    }

    private func page(_ context: AppRequestContext, values: [String: Any] = [:], status: HTTPResponse.Status = .ok) async throws -> Response {
        let individual = try context.signedInIndividual()
        let (current, updatedAt) = try await settings.settings(of: individual)
        let incidents = try await incidents.incidents(of: individual, before: nil, limit: 50)
        var shown = PortalPages.values(of: SOSSettingsBody(current, updatedAt: updatedAt)) as? [String: Any] ?? [:]
        if let typed = values["typed"] as? [String: Any] { shown.merge(typed) { $1 } }  // what was typed, beside its problems
        var contacts = shown["contacts"] as? [[String: Any]] ?? []
        while contacts.count < SOSSettings.maximumContacts { contacts.append([:]) }
        let errors = values["errors"] as? [String: String] ?? [:]
        shown["contacts"] = contacts.enumerated().map { index, contact in
            // A contact's problems are named `contacts[i].phone`: shown beside its row.
            let own = errors.filter { $0.key.hasPrefix("contacts[\(index)].") }.sorted { $0.key < $1.key }
                .map { "\($0.key.split(separator: ".").last ?? ""): \($0.value)" }
            var row = contact.merging(["index": index]) { $1 }
            if !own.isEmpty { row["contactError"] = own.joined(separator: "; ") }
            return row
        }
        var all = values
        all["settings"] = shown
        all["incidents"] = PortalPages.values(of: incidents.map(SOSIncidentBody.init))
        all["hasIncidents"] = !incidents.isEmpty
        return try await site.page("me-sos", title: "AutomatedSOS", context, values: all, status: status)
    }

    /// The form as the API's settings body: contacts are numbered rows, an empty row left out.
    static func form(_ form: PortalForm) throws -> SOSSettingsForm {
        var contacts: [SOSSettingsForm.Contact] = []
        for index in 0..<SOSSettings.maximumContacts {
            func field(_ name: String) -> String? { form["contacts[\(index)].\(name)"].flatMap { $0.trimmingCharacters(in: .whitespaces).nonEmpty } }
            guard field("name") != nil || field("phone") != nil || field("email") != nil else { continue }
            contacts.append(.init(name: field("name"), phone: field("phone"), email: field("email"), webhookUrl: nil))
        }
        return SOSSettingsForm(
            enabled: form["enabled"] != nil, minHeartRate: try form.number("minHeartRate"), maxHeartRate: try form.number("maxHeartRate"),
            minOxygenSaturation: try form.number("minOxygenSaturation"), consecutiveReadings: try form.integer("consecutiveReadings"),
            cancelWindowSeconds: try form.integer("cancelWindowSeconds"), contacts: contacts, medicalNotes: form["medicalNotes"]
        )
    }
}
