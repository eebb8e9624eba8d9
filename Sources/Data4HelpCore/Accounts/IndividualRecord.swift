import Foundation

/// An individual's account as stored (without the password hash).
package struct IndividualRecord: Sendable, Equatable {
    package var id: Int64
    package var publicId: UUID
    package var email: String
    package var fiscalCode: String
    package var fullName: String
    /// `YYYY-MM-DD`.
    package var birthDate: String
    package var sex: String
    package var homeArea: String
    package var timeZone: String
    /// Left out of every aggregate's population (migration 0035).
    package var aggregatesOptOut: Bool
    /// Measured by the person (migration 0040); analyses use 220 − age without it.
    package var maximumHeartRate: Double?
    package var createdAt: Date
    package var updatedAt: Date

    package init(
        id: Int64, publicId: UUID, email: String, fiscalCode: String, fullName: String, birthDate: String, sex: String, homeArea: String,
        timeZone: String, aggregatesOptOut: Bool = false, maximumHeartRate: Double? = nil, createdAt: Date,
        updatedAt: Date
    ) {
        self.id = id
        self.publicId = publicId
        self.email = email
        self.fiscalCode = fiscalCode
        self.fullName = fullName
        self.birthDate = birthDate
        self.sex = sex
        self.homeArea = homeArea
        self.timeZone = timeZone
        self.aggregatesOptOut = aggregatesOptOut
        self.maximumHeartRate = maximumHeartRate
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}
