import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation

/// Why a care request was refused.
package enum CareError: Error, Equatable {
    /// No such link of the caller's (as the person, or as its carer).
    case linkNotFound
    /// No open invitation by that id to the caller's address.
    case invitationNotFound
    /// A rule id that is not one of the caller's rules.
    case unknownRule
    /// The address is the caller's own.
    case ownAddress
    /// That address already has an open invitation or link from the caller.
    case alreadyInvited
    /// The caller has the most open links there may be.
    case tooManyLinks(maximum: Int)
}

/// Carers (the Access Policy Manager's links between two individuals): a person invites an
/// address to follow chosen types and receive chosen rules' alerts; whoever holds that address
/// accepts or declines; either side ends it. A carer sees only what a link they accepted shares,
/// only while it lasts, and every look is in the person's access log.
package struct CareService: Sendable {
    let store: CareLinkStore
    /// Where the invitation mail sends the invitee (the portal's sign-in page).
    let signInURL: String
    /// Wakes the mail dispatcher once an invitation's mail is committed.
    let mailQueued: ChangeSignal

    /// Open links (invited or accepted) one person may have.
    package static let maximumOpenLinks = 20
    /// Messages one address may be sent in an hour (as registration's).
    package static let mailCap = 5
    /// Open alerts shown per person in the carer's list.
    package static let alertsShown = 20

    package init(database: Database, signInURL: String, mailQueued: ChangeSignal) {
        store = CareLinkStore(database: database)
        self.signInURL = signInURL
        self.mailQueued = mailQueued
    }

    package func invite(
        _ email: EmailAddress, types: [SampleType], rules: [UUID], by individual: IndividualID
    ) async throws -> CareLink {
        let result = try await store.invite(
            individualId: individual.rowId, email: email.value, typeCodes: types.map(\.storageCode), rules: rules, maximum: Self.maximumOpenLinks,
            mail: CareMail.invitation(email.value, signIn: signInURL), mailCap: Self.mailCap)
        switch result {
        case .success(let link):
            mailQueued.notify()
            return link
        case .failure(.unknownRule): throw CareError.unknownRule
        case .failure(.ownAddress): throw CareError.ownAddress
        case .failure(.alreadyOpen): throw CareError.alreadyInvited
        case .failure(.tooMany): throw CareError.tooManyLinks(maximum: Self.maximumOpenLinks)
        }
    }

    /// The caller's links as the person cared for, newest first.
    package func links(of individual: IndividualID) async throws -> [CareLink] {
        try await store.links(individualId: individual.rowId, limit: 100)
    }

    /// Withdraws an invitation or ends a link, as the person or as the carer.
    package func end(_ link: UUID, by individual: IndividualID, as side: CareLinkEnder) async throws {
        guard try await store.end(link, by: side, accountId: individual.rowId) else { throw CareError.linkNotFound }
    }

    /// Open invitations to the caller's address.
    package func invitations(to individual: IndividualID) async throws -> [CareLink] {
        try await store.invitations(carerId: individual.rowId, limit: 100)
    }

    package func respond(to invitation: UUID, by individual: IndividualID, accept: Bool) async throws -> CareLink {
        guard let link = try await store.respond(invitation, carerId: individual.rowId, accept: accept) else {
            throw CareError.invitationNotFound
        }
        return link
    }

    /// The people the caller cares for, with what each shares now (and the look logged).
    package func caring(for individual: IndividualID) async throws -> [CaredFor] {
        try await store.caring(carerId: individual.rowId, limit: 100, alertLimit: Self.alertsShown) { code in
            SampleType(storageCode: code)?.rawValue ?? "unknown"
        }
    }
}

/// The invitation mail: no personal data (a mailbox may be read by others, and every relay
/// keeps a copy); the invitee signs in to see who it is from and what they would see.
enum CareMail {
    static func invitation(_ recipient: String, signIn: String) -> OutboundMessage {
        OutboundMessage(
            recipient: recipient, subject: "You were invited to be a carer on Data4Help",
            body: """
                Someone using Data4Help asked you to be their carer: to follow some of their health
                readings and to be told when one of their watch rules raises an alert.

                Sign in to Data4Help with this e-mail address to see who asked and what they would
                share, and to accept or decline: \(signIn)

                If you have no Data4Help account, you can create one with this address. Nothing is
                shared with you unless you accept, and either of you can end it at any time.
                """)
    }
}
