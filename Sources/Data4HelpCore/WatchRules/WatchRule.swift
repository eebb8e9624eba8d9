import Foundation

/// When a reading's value meets a rule's condition. Bounds are in the type's canonical unit.
package enum WatchComparison: Sendable, Equatable {
    case below(Float)
    case above(Float)
    /// Below `low` or above `high`.
    case outside(low: Float, high: Float)

    package func isMet(by value: Float) -> Bool {
        switch self {
        case .below(let bound): value < bound
        case .above(let bound): value > bound
        case .outside(let low, let high): value < low || value > high
        }
    }
}

/// A statistic over a trailing window of readings.
package enum WatchAggregate: String, Sendable, CaseIterable {
    case average, median, min, max
}

/// How long a condition must hold before it is an episode.
package enum WatchPersistence: Sendable, Equatable {
    /// N readings in a row (in sample-time order) meet it.
    case consecutive(Int)
    /// Every reading meets it for at least this long, with no gap longer than `maximumGapMs`.
    case sustained(milliseconds: Int64)
    /// The statistic of the readings in the trailing window ending at a reading meets it.
    case aggregate(WatchAggregate, windowMs: Int64)
}

/// How serious an alert is. `emergency` is AutomatedSOS's rule (set with `PUT /api/users/sos`),
/// which opens an incident and calls an ambulance instead of raising an alert; an individual's own
/// watch rules raise the others.
package enum AlertSeverity: String, Sendable, CaseIterable {
    case info, warning, urgent, emergency
}

/// Local times of day a rule is active in, `[from, to)` in minutes after midnight of the
/// individual's time zone; `from > to` spans midnight (22:00–07:00).
package struct ActiveHours: Sendable, Equatable {
    package var fromMinute: Int
    package var toMinute: Int

    package init(fromMinute: Int, toMinute: Int) {
        self.fromMinute = fromMinute
        self.toMinute = toMinute
    }

    package func contains(minuteOfDay minute: Int) -> Bool {
        fromMinute < toMinute ? (minute >= fromMinute && minute < toMinute) : (minute >= fromMinute || minute < toMinute)
    }
}

/// What a watch rule watches and what it does, as the individual set it.
package struct WatchRuleSettings: Sendable, Equatable {
    package var name: String
    /// `SampleType.storageCode`.
    package var typeCode: Int16
    package var comparison: WatchComparison
    package var persistence: WatchPersistence
    package var activeHours: ActiveHours?
    package var severity: AlertSeverity
    package var notifyDevice: Bool
    /// A new alert of the rule waits this long after its last one (0: none).
    package var throttleSeconds: Int
    package var enabled: Bool
    /// The template it was adopted from.
    package var template: String?

    package init(
        name: String, typeCode: Int16, comparison: WatchComparison, persistence: WatchPersistence, activeHours: ActiveHours? = nil,
        severity: AlertSeverity, notifyDevice: Bool = true, throttleSeconds: Int = 6 * 3600, enabled: Bool = true, template: String? = nil
    ) {
        self.name = name
        self.typeCode = typeCode
        self.comparison = comparison
        self.persistence = persistence
        self.activeHours = activeHours
        self.severity = severity
        self.notifyDevice = notifyDevice
        self.throttleSeconds = throttleSeconds
        self.enabled = enabled
        self.template = template
    }
}

/// A stored watch rule.
package struct WatchRule: Sendable, Equatable {
    /// The row's key, for the detector and for keyset pages.
    package var sequence: Int64
    package var publicId: UUID
    package var settings: WatchRuleSettings
    package var createdAt: Date
    package var updatedAt: Date

    package init(sequence: Int64, publicId: UUID, settings: WatchRuleSettings, createdAt: Date, updatedAt: Date) {
        self.sequence = sequence
        self.publicId = publicId
        self.settings = settings
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// One reading of an alert's episode.
package struct AlertReading: Sendable, Equatable, Codable {
    package var timeMs: Int64
    package var value: Float

    package init(timeMs: Int64, value: Float) {
        self.timeMs = timeMs
        self.value = value
    }
}

/// An alert a rule raised.
package struct WatchAlert: Sendable, Equatable {
    package var sequence: Int64
    package var publicId: UUID
    /// Nil once the rule is deleted (the alert stays).
    package var rulePublicId: UUID?
    package var ruleName: String
    package var typeCode: Int16
    package var severity: AlertSeverity
    /// The rule's condition in words, as it was when raised.
    package var condition: String
    package var episodeFirstMs: Int64
    package var episodeLastMs: Int64
    /// The latest readings of the episode (at most `WatchAlert.keptReadings`), oldest first.
    package var readings: [AlertReading]
    package var raisedAt: Date
    package var updatedAt: Date
    package var acknowledgedAt: Date?

    /// Readings an alert keeps of its episode (the latest).
    package static let keptReadings = 100

    package init(
        sequence: Int64, publicId: UUID, rulePublicId: UUID?, ruleName: String, typeCode: Int16, severity: AlertSeverity, condition: String,
        episodeFirstMs: Int64, episodeLastMs: Int64, readings: [AlertReading], raisedAt: Date, updatedAt: Date, acknowledgedAt: Date?
    ) {
        self.sequence = sequence
        self.publicId = publicId
        self.rulePublicId = rulePublicId
        self.ruleName = ruleName
        self.typeCode = typeCode
        self.severity = severity
        self.condition = condition
        self.episodeFirstMs = episodeFirstMs
        self.episodeLastMs = episodeLastMs
        self.readings = readings
        self.raisedAt = raisedAt
        self.updatedAt = updatedAt
        self.acknowledgedAt = acknowledgedAt
    }
}
