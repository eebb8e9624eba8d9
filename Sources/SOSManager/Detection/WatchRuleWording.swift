import Data4HelpCore
import DatabaseLink
import Foundation
import HealthSharing

/// A rule's condition in words, for alerts and their messages ("heart rate below 40 bpm for 20
/// minutes").
package enum WatchRuleWording {
    package static func condition(of settings: WatchRuleSettings, type: SampleType) -> String {
        let unit: String =
            switch type.definition {
            case .quantity(let unit, _, _): unit == "%" ? "%" : " " + unit
            case .category: ""
            }
        func number(_ value: Float) -> String { Double(value.description).map { $0.formatted(.number.grouping(.never)) } ?? value.description }
        let bounds: String =
            switch settings.comparison {
            case .below(let bound): "below \(number(bound))\(unit)"
            case .above(let bound): "above \(number(bound))\(unit)"
            case .outside(let low, let high): "outside \(number(low))–\(number(high))\(unit)"
            }
        let subject = type.spokenName
        switch settings.persistence {
        case .consecutive(1): return "\(subject) \(bounds)"
        case .consecutive(let count): return "\(subject) \(bounds) in \(count) readings in a row"
        case .sustained(let duration): return "\(subject) \(bounds) for \(minutes(duration))"
        case .aggregate(let statistic, let window): return "\(statistic.rawValue) \(subject) over \(minutes(window)) \(bounds)"
        }
    }

    static func minutes(_ milliseconds: Int64) -> String {
        let minutes = milliseconds / 60_000
        if minutes % 60 == 0 { return minutes == 60 ? "1 hour" : "\(minutes / 60) hours" }
        return minutes == 1 ? "1 minute" : "\(minutes) minutes"
    }
}

extension SampleType {
    /// The type's name in a sentence ("heart rate", "blood glucose").
    package var spokenName: String {
        rawValue.reduce(into: "") { words, character in
            if character.isUppercase { words += " " + character.lowercased() } else { words.append(character) }
        }
    }

    /// The name as a heading or a list item starts it ("Heart rate").
    package var spokenTitle: String {
        let name = spokenName
        return name.prefix(1).uppercased() + name.dropFirst()
    }
}
