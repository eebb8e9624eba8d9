import Data4HelpCore
import DatabaseLink

/// `run.cancelled`, to the device of every runner enrolled in an event its organiser cancelled.
struct RunCancelledNotice: OutboxNotice {
    static let eventType = "run.cancelled"

    let runId: String
    let name: String

    init(_ event: RunEventRecord) {
        runId = event.publicId.wireString
        name = event.name
    }
}
