import Data4HelpCore
import DatabaseLink

/// `run.cancelled`, to the device of every runner enrolled in an event its organiser cancelled.
struct RunCancelledNotice: Encodable {
    static let eventType = "run.cancelled"

    let runId: String
    let name: String

    init(_ event: RunEventRecord) {
        runId = event.publicId.wireString
        name = event.name
    }

    var message: OutboxMessage {
        get throws { try OutboxMessage(eventType: Self.eventType, body: self) }
    }
}
