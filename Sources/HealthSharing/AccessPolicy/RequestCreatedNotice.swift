import Data4HelpCore
import DatabaseLink

/// `request.created`, to the device of the individual a request names: who asks, why, for what.
/// (Never sent for a request withheld because the individual blocked the organisation.)
struct RequestCreatedNotice: OutboxNotice {
    static let eventType = "request.created"

    let requestId: String
    let organisation: String
    let purpose: String
    let types: [String]

    init(_ record: AccessRequestRecord) {
        requestId = record.publicId.wireString
        organisation = record.organisationName
        purpose = record.purpose
        types = record.asked.types
    }
}
