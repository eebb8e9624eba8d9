import Foundation

/// Where a care link stands.
package enum CareLinkStatus: String, Sendable, CaseIterable {
    /// Sent to an address; nobody has answered.
    case invited
    /// The carer follows the person.
    case accepted
    /// The invitee said no.
    case declined
    /// Withdrawn or ended by either side: shows nothing any more.
    case ended
}

/// Who ended a care link.
package enum CareLinkEnder: String, Sendable {
    case individual
    case carer
}

/// A care link as both sides see it: the person cared for invited an address to follow chosen
/// types of their data and to receive chosen watch rules' alerts.
package struct CareLink: Sendable, Equatable {
    package var sequence: Int64
    package var publicId: UUID
    /// The person cared for.
    package var personName: String
    /// The address invited.
    package var carerEmail: String
    /// The carer, once accepted.
    package var carerName: String?
    /// `SampleType.storageCode`s.
    package var typeCodes: [Int16]
    /// The person's rules whose alerts the carer receives.
    package var rulePublicIds: [UUID]
    package var status: CareLinkStatus
    package var createdAt: Date
    package var respondedAt: Date?
    package var endedAt: Date?
    package var endedBy: CareLinkEnder?

    package init(
        sequence: Int64, publicId: UUID, personName: String, carerEmail: String, carerName: String?, typeCodes: [Int16], rulePublicIds: [UUID],
        status: CareLinkStatus, createdAt: Date, respondedAt: Date?, endedAt: Date?, endedBy: CareLinkEnder?
    ) {
        self.sequence = sequence
        self.publicId = publicId
        self.personName = personName
        self.carerEmail = carerEmail
        self.carerName = carerName
        self.typeCodes = typeCodes
        self.rulePublicIds = rulePublicIds
        self.status = status
        self.createdAt = createdAt
        self.respondedAt = respondedAt
        self.endedAt = endedAt
        self.endedBy = endedBy
    }
}

/// The newest stored reading of one shared type, as a carer sees it.
package struct LatestReading: Sendable, Equatable {
    package var typeCode: Int16
    package var timeMs: Int64
    package var value: Float

    package init(typeCode: Int16, timeMs: Int64, value: Float) {
        self.typeCode = typeCode
        self.timeMs = timeMs
        self.value = value
    }
}

/// One person a carer cares for, as the carer's list shows them: the link, the latest reading of
/// each shared type, the shared rules' open alerts.
package struct CaredFor: Sendable {
    package let link: CareLink
    package let latest: [LatestReading]
    package let openAlerts: [WatchAlert]

    package init(link: CareLink, latest: [LatestReading], openAlerts: [WatchAlert]) {
        self.link = link
        self.latest = latest
        self.openAlerts = openAlerts
    }
}
