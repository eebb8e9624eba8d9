import AccessManager
import Data4HelpCore
import Foundation
import Hummingbird
import Logging

/// `/api/thirdparties`: an organisation's registration and profile.
struct ThirdPartyAccountController {
    let accounts: ThirdPartyAccounts
    let registrations: RegistrationService
    let body: JSONBody

    /// `POST registration` (public): 202 and a message to the address, as for individuals;
    /// `POST registration/confirmation` with the mailed token: 201, the organisation's account.
    func addRegistration(to group: RouterGroup<AppRequestContext>) {
        group.post("registration") { request, context -> EditedResponse<RegistrationReceiptBody> in
            let form = try await body.decode(ThirdPartyRegistrationBody.self, from: request, context: context)
            return EditedResponse(status: .accepted, response: RegistrationReceiptBody(try await registrations.register(form.validated())))
        }
        group.post("registration/confirmation") { request, context -> EditedResponse<ThirdPartyProfileBody> in
            let token = try await body.decode(ConfirmationBody.self, from: request, context: context).validated()
            let record = try await registrations.confirmThirdParty(token: token)
            return EditedResponse(status: .created, headers: [.location: "/api/thirdparties/me"], response: ThirdPartyProfileBody(record))
        }
    }

    /// `GET me`.
    func addAuthenticated(to group: some RouterMethods<ThirdPartyRequestContext>) {
        group.get("me") { _, context in
            try await ThirdPartyProfileBody(accounts.profile(of: context.party))
        }
    }
}

struct ThirdPartyRegistrationBody: Decodable {
    var name: String?
    var email: String?
    var password: String?

    func validated() throws(Problem) -> ThirdPartyRegistration {
        var fields = FieldValidator()
        let name = fields.required("name", name, OrganisationName.init(parsing:))
        let email = fields.required("email", email, EmailAddress.init(parsing:))
        let password = fields.required("password", password, Password.init(parsing:))
        try fields.finish()
        return ThirdPartyRegistration(name: name!, email: email!, password: password!)
    }
}

/// An organisation's own account.
struct ThirdPartyProfileBody: ResponseEncodable {
    let id: String
    let name: String
    let email: String
    let createdAt: Date

    init(_ record: ThirdPartyRecord) {
        id = record.publicId.wireString
        name = record.name
        email = record.email
        createdAt = record.createdAt
    }
}
