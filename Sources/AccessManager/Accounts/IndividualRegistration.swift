/// A valid individual registration: every field already parsed into its type.
package struct IndividualRegistration: Sendable {
    package var email: EmailAddress
    package var password: Password
    package var fiscalCode: FiscalCode
    package var fullName: PersonName
    package var birthDate: BirthDate
    package var sex: Sex
    package var homeArea: AreaCode

    package init(
        email: EmailAddress, password: Password, fiscalCode: FiscalCode, fullName: PersonName,
        birthDate: BirthDate, sex: Sex, homeArea: AreaCode
    ) {
        self.email = email
        self.password = password
        self.fiscalCode = fiscalCode
        self.fullName = fullName
        self.birthDate = birthDate
        self.sex = sex
        self.homeArea = homeArea
    }
}

/// A valid change to an individual's profile and settings; nil fields stay as they are.
package struct IndividualProfileChange: Sendable {
    package var email: EmailAddress?
    package var fullName: PersonName?
    package var birthDate: BirthDate?
    package var sex: Sex?
    package var homeArea: AreaCode?
    package var timeZone: TimeZoneName?
    /// A new password; requires `currentPassword`.
    package var newPassword: Password?
    package var currentPassword: String?
    /// True leaves every aggregate's population from the next query on; false comes back.
    package var aggregatesOptOut: Bool?
    /// A measured maximum heart rate (100–250 bpm), or `.some(nil)` to clear it; nil leaves it.
    package var maximumHeartRate: Double??

    package init() {}
}
