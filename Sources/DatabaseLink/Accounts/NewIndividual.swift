import Foundation

/// The values of a new individual account, already validated and normalised.
package struct NewIndividual: Sendable {
    package var email: String
    package var passwordHash: String
    package var fiscalCode: String
    package var fullName: String
    package var birthDate: String
    package var sex: String
    package var homeArea: String

    package init(email: String, passwordHash: String, fiscalCode: String, fullName: String, birthDate: String, sex: String, homeArea: String) {
        self.email = email
        self.passwordHash = passwordHash
        self.fiscalCode = fiscalCode
        self.fullName = fullName
        self.birthDate = birthDate
        self.sex = sex
        self.homeArea = homeArea
    }
}

/// A partial update of an individual's profile; nil leaves a column as it is.
package struct IndividualChanges: Sendable {
    package var email: String?
    package var fullName: String?
    package var birthDate: String?
    package var sex: String?
    package var homeArea: String?
    package var timeZone: String?
    package var passwordHash: String?
    package var aggregatesOptOut: Bool?
    /// `.some(nil)` clears the measured maximum heart rate; nil leaves it.
    package var maximumHeartRate: Double??

    package init() {}
}
