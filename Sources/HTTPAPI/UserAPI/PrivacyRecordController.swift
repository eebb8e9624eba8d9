import AccessManager
import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// `GET /api/users/privacy-record`: where my data went — per organisation its requests, grants
/// and what it received; my share links and their openings; the released aggregate answers that
/// counted me (the question, when, for whom, the ε spent — never a figure about me, none exists);
/// and whether I am left out of aggregates from now on.
struct PrivacyRecordController {
    let record: PrivacyRecordService
    let accounts: IndividualAccounts

    func addRoutes(to group: some RouterMethods<IndividualRequestContext>) {
        group.get("privacy-record") { _, context in
            PrivacyRecordBody(
                try await record.record(of: context.individual), optOut: try await accounts.profile(of: context.individual).aggregatesOptOut)
        }
    }
}

struct PrivacyRecordBody: ResponseEncodable, Sendable {
    struct Received: Encodable, Sendable {
        let disclosures: Int
        let items: Int
        let first: Date
        let last: Date
        let channels: [String]
    }

    struct Organisation: Encodable, Sendable {
        let organisation: AccessRequestBody.Organisation
        let requests: [AccessRequestBody]
        @Nullable var received: Received?
    }

    struct Answer: Encodable, Sendable {
        struct Question: Encodable, Sendable {
            let type: String
            let statistic: String
            let from: String
            let to: String
            let areas: [String]
            let ageBands: [String]
            @Nullable var sex: String?
            @Nullable var groupBy: String?
        }

        let queryId: String
        let answeredAt: Date
        let organisation: AccessRequestBody.Organisation
        /// The question asked, whose filter the person matched.
        let question: Question?
        let epsilon: Double

        init(_ answer: IncludedAnswer) {
            let spec = (try? JSONSerialization.jsonObject(with: Data(answer.spec.utf8))) as? [String: Any] ?? [:]
            question = (spec["type"] as? String).map { type in
                Question(
                    type: type, statistic: spec["statistic"] as? String ?? "", from: spec["from"] as? String ?? "",
                    to: spec["to"] as? String ?? "", areas: spec["areas"] as? [String] ?? [], ageBands: spec["ageBands"] as? [String] ?? [],
                    sex: spec["sex"] as? String, groupBy: spec["groupBy"] as? String)
            }
            queryId = answer.queryPublicId.wireString
            answeredAt = answer.answeredAt
            organisation = AccessRequestBody.Organisation(id: answer.organisationPublicId.wireString, name: answer.organisationName, profile: nil)
            epsilon = Double(answer.epsilonHundredths) / 100
        }
    }

    let aggregatesOptOut: Bool
    let organisations: [Organisation]
    let shareLinks: [ShareLinkBody]
    let aggregateAnswers: [Answer]

    init(_ record: PrivacyRecord, optOut: Bool) {
        aggregatesOptOut = optOut
        organisations = record.organisations.map { organisation in
            Organisation(
                organisation: AccessRequestBody.Organisation(
                    id: organisation.publicId.wireString, name: organisation.name, profile: organisation.profile),
                requests: organisation.requests.map { AccessRequestBody($0, for: .individual) },
                received: organisation.received.map {
                    Received(disclosures: $0.disclosures, items: $0.items, first: $0.first, last: $0.last, channels: $0.channels)
                })
        }
        shareLinks = record.shareLinks.map { ShareLinkBody($0) }
        aggregateAnswers = record.aggregateAnswers.map(Answer.init)
    }
}
