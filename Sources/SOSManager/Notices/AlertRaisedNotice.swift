import Data4HelpCore
import DatabaseLink
import Foundation

/// `alert.raised`, to the individual's own device when a watch rule raises an alert (once per
/// episode: an episode that goes on extends its alert without another message).
struct AlertRaisedNotice: OutboxNotice {
    static let eventType = "alert.raised"

    let alertId: String
    let ruleId: String
    let ruleName: String
    let type: String
    let severity: String
    let condition: String
    let raisedAt: String
    let episodeStart: String
    let latestValue: Double?

    init(_ alert: RaisedAlert, rule: WatchRule, typeName: String, condition: String, latest: StoredReading?, episodeStartMs: Int64) {
        alertId = alert.publicId.wireString
        ruleId = rule.publicId.wireString
        ruleName = rule.settings.name
        type = typeName
        severity = rule.settings.severity.rawValue
        self.condition = condition
        raisedAt = WireFormat.timestamp(alert.raisedAt)
        episodeStart = WireFormat.timestamp(milliseconds: episodeStartMs)
        latestValue = latest.map { Double($0.value.description) ?? Double($0.value) }
    }
}
