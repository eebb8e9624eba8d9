import Data4HelpCore
import DatabaseLink
import Foundation

/// `care.alert.raised`, to a carer's device when a rule the person shared with them raises an
/// alert: who it is about (the care link and the person's name) and the alert as the person's
/// own device is told of it.
struct CareAlertNotice: OutboxNotice {
    static let eventType = "care.alert.raised"

    let careLinkId: String
    let personName: String
    let alert: AlertRaisedNotice

    init(_ carer: AlertCarer, alert: AlertRaisedNotice) {
        careLinkId = carer.linkPublicId.wireString
        personName = carer.personName
        self.alert = alert
    }
}
