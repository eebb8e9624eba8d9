import AccessManager
import Data4HelpCore
import Foundation
import HTTPTypes
import HealthSharing
import Hummingbird
import Mustache
import SOSManager

/// `/s/{token}`: the page a share link opens, for someone with no account (a doctor): the
/// person's chosen types over the chosen window, as charts and a printable table of daily
/// figures. A link with a PIN asks for it first (`POST` with the PIN; nothing is shown before).
///
/// Never indexed, never cached, never sent as a referrer; every answer that is not the data —
/// unknown, revoked, expired — is one and the same page. Limited per address (the pages'
/// `RateLimiter` with the `visitor` key), on top of the link's own lock after ten wrong PINs.
struct SharedDataPage {
    let links: ShareLinkService
    let library: MustacheLibrary
    let limiter: RateLimiter
    let maxBodyBytes: Int

    func addRoutes(to router: some RouterMethods<AppRequestContext>) {
        router.get("s/{token}") { _, context in
            try await answer(context, pin: nil)
        }
        router.post("s/{token}") { request, context in
            var request = request
            let form = try await PortalForm(&request, limit: min(maxBodyBytes, 4_096))
            return try await answer(context, pin: form["pin"] ?? "")
        }
    }

    private func answer(_ context: AppRequestContext, pin: String?) async throws -> Response {
        let address = context.clientAddress ?? "unknown"
        let decision = limiter.take(.visitor(address: address))
        guard decision.allowed else {
            return page(["refused": true, "tooMany": true], status: .tooManyRequests, retryAfter: decision.retryAfterSeconds)
        }
        let token = context.parameters.get("token") ?? ""
        switch try await links.open(token: token, pin: pin, address: address) {
        case .notFound:
            return page(["refused": true], status: .notFound)
        case .locked:
            return page(["refused": true, "locked": true], status: .forbidden)
        case .pinRequired(let label, let wrong, let triesLeft):
            return page(["pinRequired": true, "label": label, "wrong": wrong, "triesLeft": triesLeft], status: wrong ? .unprocessableContent : .ok)
        case .shown(let link, let owner, let summaries):
            return page(Self.values(link, owner: owner, summaries), status: .ok)
        }
    }

    /// The data part of the page: per type, a bar chart of the daily figure and the table.
    static func values(_ link: ShareLink, owner: String, _ summaries: [OwnDataSummary]) -> [String: Any] {
        let day = Date.FormatStyle(date: .abbreviated, time: .omitted, timeZone: TimeZone(identifier: summaries.first?.timeZone ?? "UTC") ?? .gmt)
        func number(_ value: Double) -> String { value.formatted(.number.precision(.fractionLength(0...1))) }
        let sections = summaries.map { summary -> [String: Any] in
            let body = SummaryBody(summary)
            let total = summary.type.isInterval
            let short = Date.FormatStyle(timeZone: TimeZone(identifier: summary.timeZone) ?? .gmt).day().month(.abbreviated)
            let bars = summary.buckets.map { bucket in
                AggregateChart.Bar(label: bucket.start.formatted(short), value: total ? (bucket.sum ?? 0) : bucket.mean)
            }
            let title =
                "\(summary.type.spokenTitle) (\(total ? "daily total" : "daily mean"))"
            return [
                "title": title, "unit": body.unit, "empty": summary.buckets.isEmpty, "total": total,
                "svg": summary.buckets.isEmpty ? "" : AggregateChart.svg(bars, title: title, unit: body.unit),
                "days": summary.buckets.map { bucket -> [String: Any] in
                    [
                        "day": bucket.start.formatted(day), "count": bucket.count, "minimum": number(bucket.minimum),
                        "mean": number(bucket.mean), "maximum": number(bucket.maximum), "sum": bucket.sum.map(number) ?? "",
                    ]
                },
            ]
        }
        return [
            "shown": true, "label": link.label, "owner": owner, "sections": sections,
            "from": link.dataFrom.formatted(day), "to": link.dataTo.addingTimeInterval(-1).formatted(day),
            "expires": link.expiresAt.formatted(date: .abbreviated, time: .shortened),
            "printed": Date().formatted(date: .abbreviated, time: .shortened),
        ]
    }

    private func page(_ values: [String: Any], status: HTTPResponse.Status, retryAfter: Int? = nil) -> Response {
        var response = HTML(library.render(values, withTemplate: "shared") ?? "").response
        response.status = status
        // Not indexed, not kept, and the link never leaves in a Referer header.
        response.headers[.xRobotsTag] = "noindex, nofollow, noarchive"
        response.headers[.referrerPolicy] = "no-referrer"
        response.headers[.cacheControl] = "no-store"
        if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
        return response
    }
}

extension HTTPField.Name {
    static let xRobotsTag = Self("X-Robots-Tag")!
    static let referrerPolicy = Self("Referrer-Policy")!
}
