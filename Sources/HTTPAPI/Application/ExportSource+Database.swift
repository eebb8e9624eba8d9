import AccessManager
import DatabaseLink
import HealthSharing
import RunEvents
import SOSManager

extension ExportSource {
    /// The export's readers over `database` (the primary, or a replica that has caught up).
    init(database: Database) {
        ownData = OwnDataReader(database: database)
        requests = AccessRequestService(database: database)
        accessLog = AccessLog(database: database)
        incidents = SOSIncidentService(database: database)
        runs = RunEventService(database: database)
        runPositions = LivePositions(database: database)
        workouts = WorkoutService(database: database)
        offers = OfferService(database: database)
        privacy = PrivacyRecordService(database: database)
    }
}
