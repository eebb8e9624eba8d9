import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird
import SOSManager

/// `/me/carers` (invite someone to care for me, see and end my links, answer invitations to me)
/// and `/me/caring` (the people I care for, what they share, stop). The API's validation and
/// refusals, shown beside their fields.
struct MeCarePages {
    let site: PortalSite
    let care: CareService
    let rules: WatchRuleService

    func addRoutes(to group: some RouterMethods<AppRequestContext>) {
        group.get("carers") { _, context in try await carersPage(context) }
        group.post("carers") { request, context in
            try await site.submit(request, context, keeping: ["email"], showing: { try await carersPage($0, values: $1, status: $2) }) { form in
                let invitation = CareInvitationForm(email: form.text("email"), types: form.values("types"), rules: form.values("rules"))
                let (email, types, chosen) = try invitation.validated()
                _ = try await care.invite(email, types: types, rules: chosen, by: try context.signedInIndividual())
                return PortalForm.redirect(to: "/me/carers")
            }
        }
        group.post("carers/{linkId}/end") { request, context in
            try await site.submit(request, context, showing: carersPage) { _ in
                try await care.end(try CareController.id(context, .linkNotFound), by: try context.signedInIndividual(), as: .individual)
                return PortalForm.redirect(to: "/me/carers")
            }
        }
        for (action, accept) in [("accept", true), ("decline", false)] {
            group.post("carers/invitations/{linkId}/\(action)") { request, context in
                try await site.submit(request, context, showing: carersPage) { _ in
                    _ = try await care.respond(
                        to: try CareController.id(context, .invitationNotFound), by: try context.signedInIndividual(), accept: accept)
                    return PortalForm.redirect(to: accept ? "/me/caring" : "/me/carers")
                }
            }
        }
        group.get("caring") { _, context in try await caringPage(context) }
        group.post("caring/{linkId}/end") { request, context in
            try await site.submit(request, context, showing: caringPage) { _ in
                try await care.end(try CareController.id(context, .linkNotFound), by: try context.signedInIndividual(), as: .carer)
                return PortalForm.redirect(to: "/me/caring")
            }
        }
    }

    private func carersPage(_ context: AppRequestContext, values: [String: Any] = [:], status: HTTPResponse.Status = .ok) async throws -> Response {
        let individual = try context.signedInIndividual()
        let links = try await care.links(of: individual)
        let invitations = try await care.invitations(to: individual)
        let mine = try await rules.rules(of: individual, limit: WatchRuleService.maximumRules, before: nil)
        let ruleNames = Dictionary(mine.map { ($0.publicId, $0.settings.name) }, uniquingKeysWith: { first, _ in first })
        var all = values
        all["links"] = links.map { link -> [String: Any] in
            [
                "id": link.publicId.wireString, "email": link.carerEmail, "carer": link.carerName ?? "", "status": link.status.rawValue,
                "open": link.status == .invited || link.status == .accepted, "types": Self.spoken(link.typeCodes),
                "rules": link.rulePublicIds.compactMap { ruleNames[$0] }.joined(separator: ", "),
            ]
        }
        all["hasLinks"] = !links.isEmpty
        all["invitations"] = invitations.map { link -> [String: Any] in
            ["id": link.publicId.wireString, "person": link.personName, "types": Self.spoken(link.typeCodes), "alerts": link.rulePublicIds.count]
        }
        all["hasInvitations"] = !invitations.isEmpty
        all["types"] = SampleType.allCases.map { ["name": $0.rawValue, "spoken": $0.spokenTitle] }
        all["rules"] = mine.map { ["id": $0.publicId.wireString, "name": $0.settings.name] }
        all["hasRules"] = !mine.isEmpty
        return try await site.page("me-carers", title: "Carers", context, values: all, status: status)
    }

    private func caringPage(_ context: AppRequestContext, values: [String: Any] = [:], status: HTTPResponse.Status = .ok) async throws -> Response {
        let people = try await care.caring(for: try context.signedInIndividual())
        var all = values
        all["people"] = people.map { person -> [String: Any] in
            [
                "id": person.link.publicId.wireString, "name": person.link.personName,
                "latest": person.latest.compactMap { reading -> [String: Any]? in
                    guard let type = SampleType(storageCode: reading.typeCode) else { return nil }
                    return [
                        "type": type.spokenTitle, "value": (Double(reading.value.description) ?? Double(reading.value)).formatted(),
                        "unit": Self.unit(type), "at": PortalPages.shown(Date(timeIntervalSince1970: Double(reading.timeMs) / 1000)),
                    ]
                },
                "hasLatest": !person.latest.isEmpty,
                "alerts": person.openAlerts.map { alert -> [String: Any] in
                    ["raisedAt": PortalPages.shown(alert.raisedAt), "condition": alert.condition, "severity": alert.severity.rawValue]
                },
                "hasAlerts": !person.openAlerts.isEmpty,
            ]
        }
        all["hasPeople"] = !people.isEmpty
        return try await site.page("me-caring", title: "People I care for", context, values: all, status: status)
    }

    private static func spoken(_ codes: [Int16]) -> String {
        codes.compactMap { SampleType(storageCode: $0)?.spokenName }.joined(separator: ", ")
    }

    private static func unit(_ type: SampleType) -> String {
        if case .quantity(let unit, _, _) = type.definition { unit } else { "" }
    }
}
