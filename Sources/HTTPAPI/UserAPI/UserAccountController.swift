import AccessManager
import Data4HelpCore
import Foundation
import Hummingbird
import Logging

/// `/api/users`: an individual's registration, profile and settings.
struct UserAccountController {
    let accounts: IndividualAccounts
    let registrations: RegistrationService
    let body: JSONBody

    /// `POST registration` (public): 202 and a message to the address, the same answer whatever
    /// is already registered; `POST registration/confirmation` with the mailed token: 201, the account.
    func addRegistration(to group: RouterGroup<AppRequestContext>) {
        group.post("registration") { request, context -> EditedResponse<RegistrationReceiptBody> in
            let form = try await body.decode(IndividualRegistrationBody.self, from: request, context: context)
            return EditedResponse(status: .accepted, response: RegistrationReceiptBody(try await registrations.register(form.validated())))
        }
        group.post("registration/confirmation") { request, context -> EditedResponse<IndividualProfileBody> in
            let token = try await body.decode(ConfirmationBody.self, from: request, context: context).validated()
            let record = try await registrations.confirmIndividual(token: token)
            return EditedResponse(status: .created, headers: [.location: "/api/users/me"], response: IndividualProfileBody(record))
        }
    }

    /// `GET me`, `PATCH me`.
    func addAuthenticated(to group: some RouterMethods<IndividualRequestContext>) {
        group.get("me") { _, context in
            try await IndividualProfileBody(accounts.profile(of: context.individual))
        }
        group.delete("me") { request, context in
            let form = try await body.decode(ErasureBody.self, from: request, context: context)
            guard let password = form.password else { throw Problem.invalidField("password", "is required to erase the account") }
            try await accounts.erase(context.individual, password: password)
            return Response(status: .noContent)
        }
        group.patch("me") { request, context in
            let patch = try await body.decode(IndividualProfilePatch.self, from: request, context: context)
            return try await IndividualProfileBody(
                accounts.update(context.individual, signedInWith: context.principal.credential, with: patch.validated()))
        }
    }
}

/// `DELETE /api/users/me` asks for the password again: erasure cannot be undone.
struct ErasureBody: Decodable {
    var password: String?
}

struct IndividualRegistrationBody: Decodable {
    var email: String?
    var password: String?
    var fiscalCode: String?
    var fullName: String?
    var birthDate: String?
    var sex: String?
    var homeArea: String?

    func validated() throws(Problem) -> IndividualRegistration {
        var fields = FieldValidator()
        let email = fields.required("email", email, EmailAddress.init(parsing:))
        let password = fields.required("password", password, Password.init(parsing:))
        let fiscalCode = fields.required("fiscalCode", fiscalCode, FiscalCode.init(parsing:))
        let fullName = fields.required("fullName", fullName, PersonName.init(parsing:))
        let birthDate = fields.required("birthDate", birthDate) { (raw: String) throws(InvalidValue) in try BirthDate(parsing: raw) }
        let sex = fields.required("sex", sex, Sex.init(parsing:))
        let homeArea = fields.required("homeArea", homeArea, AreaCode.init(parsing:))
        try fields.finish()
        return IndividualRegistration(
            email: email!, password: password!, fiscalCode: fiscalCode!, fullName: fullName!,
            birthDate: birthDate!, sex: sex!, homeArea: homeArea!
        )
    }
}

struct IndividualProfilePatch: Decodable {
    var email: String?
    var fullName: String?
    var birthDate: String?
    var sex: String?
    var homeArea: String?
    var timeZone: String?
    var password: String?
    var currentPassword: String?
    /// Present only to be refused: the fiscal code is how third parties name a person.
    var fiscalCode: String?
    var aggregatesOptOut: Bool?
    /// Absent: leave it; null: clear it; a number: set it.
    var maximumHeartRate: Double??

    private enum CodingKeys: String, CodingKey {
        case email, fullName, birthDate, sex, homeArea, timeZone, password, currentPassword, fiscalCode, aggregatesOptOut, maximumHeartRate
    }

    /// Absent means "leave as it is"; an explicit null would mean "remove", which only
    /// `maximumHeartRate` allows.
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func text(_ key: CodingKeys) throws -> String? {
            guard container.contains(key) else { return nil }
            return try container.decode(String.self, forKey: key)
        }
        email = try text(.email)
        fullName = try text(.fullName)
        birthDate = try text(.birthDate)
        sex = try text(.sex)
        homeArea = try text(.homeArea)
        timeZone = try text(.timeZone)
        password = try text(.password)
        currentPassword = try text(.currentPassword)
        fiscalCode = try text(.fiscalCode)
        aggregatesOptOut = try container.decodeIfPresent(Bool.self, forKey: .aggregatesOptOut)
        if container.contains(.maximumHeartRate) {
            maximumHeartRate = .some(
                try container.decodeNil(forKey: .maximumHeartRate) ? nil : container.decode(Double.self, forKey: .maximumHeartRate))
        }
    }

    func validated() throws(Problem) -> IndividualProfileChange {
        var fields = FieldValidator()
        var change = IndividualProfileChange()
        change.email = fields.optional("email", email, EmailAddress.init(parsing:))
        change.fullName = fields.optional("fullName", fullName, PersonName.init(parsing:))
        change.birthDate = fields.optional("birthDate", birthDate) { (raw: String) throws(InvalidValue) in try BirthDate(parsing: raw) }
        change.sex = fields.optional("sex", sex, Sex.init(parsing:))
        change.homeArea = fields.optional("homeArea", homeArea, AreaCode.init(parsing:))
        change.timeZone = fields.optional("timeZone", timeZone, TimeZoneName.init(parsing:))
        change.aggregatesOptOut = aggregatesOptOut
        if let maximumHeartRate {
            if let bpm = maximumHeartRate, !(100...250).contains(bpm) {
                fields.fail("maximumHeartRate", "must be between 100 and 250 beats per minute, or null to use 220 − age")
            } else {
                change.maximumHeartRate = .some(maximumHeartRate)
            }
        }
        change.newPassword = fields.optional("password", password, Password.init(parsing:))
        if fiscalCode != nil { fields.fail("fiscalCode", "cannot be changed") }
        if password != nil, currentPassword == nil { fields.fail("currentPassword", "is required to change the password") }
        if email != nil, password == nil, currentPassword == nil { fields.fail("currentPassword", "is required to change the email address") }
        change.currentPassword = currentPassword
        try fields.finish()
        return change
    }
}

/// An individual's own profile and settings.
struct IndividualProfileBody: Encodable, WrittenResponse {
    let id: String
    let email: String
    let fiscalCode: String
    let fullName: String
    let birthDate: String
    let sex: String
    let homeArea: String
    let timeZone: String
    let aggregatesOptOut: Bool
    @Nullable var maximumHeartRate: Double?
    let createdAt: Date
    let updatedAt: Date

    init(_ record: IndividualRecord) {
        id = record.publicId.wireString
        email = record.email
        fiscalCode = record.fiscalCode
        fullName = record.fullName
        birthDate = record.birthDate
        sex = record.sex
        homeArea = record.homeArea
        timeZone = record.timeZone
        aggregatesOptOut = record.aggregatesOptOut
        maximumHeartRate = record.maximumHeartRate
        createdAt = record.createdAt
        updatedAt = record.updatedAt
    }

    /// The keys in sorted order, as `WireFormat.encoder()` writes them (`JSONOutputTests`).
    func write(to output: inout JSONOutput) {
        output.raw(#"{"aggregatesOptOut":"#)
        if aggregatesOptOut { output.raw("true") } else { output.raw("false") }
        output.raw(#","birthDate":"#)
        output.string(birthDate)
        output.raw(#","createdAt":"#)
        output.timestamp(seconds: Self.wholeSeconds(createdAt))
        output.raw(#","email":"#)
        output.string(email)
        output.raw(#","fiscalCode":"#)
        output.string(fiscalCode)
        output.raw(#","fullName":"#)
        output.string(fullName)
        output.raw(#","homeArea":"#)
        output.string(homeArea)
        output.raw(#","id":"#)
        output.string(id)
        output.raw(#","maximumHeartRate":"#)
        if let maximumHeartRate { output.number(maximumHeartRate) } else { output.null() }
        output.raw(#","sex":"#)
        output.string(sex)
        output.raw(#","timeZone":"#)
        output.string(timeZone)
        output.raw(#","updatedAt":"#)
        output.timestamp(seconds: Self.wholeSeconds(updatedAt))
        output.raw("}")
    }

    /// The second a stored time falls in (`.iso8601` drops the fraction); 0 for none.
    private static func wholeSeconds(_ date: Date) -> Int64 {
        Int64(exactly: date.timeIntervalSince1970.rounded(.down)) ?? 0
    }
}
