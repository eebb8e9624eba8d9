import AccessManager
import Data4HelpCore
import DatabaseLink
import Foundation

/// A kind of data a third party can ask for: a health data type, location fixes, workouts
/// (their totals; a workout's route and heart rate are the `location` and `heartRate` kinds), or
/// a value the server derives (issue 25): each night's resting heart rate, each workout's
/// analysis. A derived kind discloses the result, never the readings it was computed from.
package enum DataKind: Sendable, Hashable {
    case sample(SampleType)
    case location
    case workout
    case restingHeartRate
    case workoutSummary

    package static let locationName = "location"
    package static let workoutName = "workout"
    package static let restingHeartRateName = "restingHeartRate"
    package static let workoutSummaryName = "workoutSummary"

    package static let named: [String: DataKind] = [
        locationName: .location, workoutName: .workout, restingHeartRateName: .restingHeartRate, workoutSummaryName: .workoutSummary,
    ]

    package init?(wireName: String) {
        if let kind = Self.named[wireName] {
            self = kind
        } else if let type = SampleType(rawValue: wireName) {
            self = .sample(type)
        } else {
            return nil
        }
    }

    package var wireName: String {
        switch self {
        case .sample(let type): type.rawValue
        case .location: Self.locationName
        case .workout: Self.workoutName
        case .restingHeartRate: Self.restingHeartRateName
        case .workoutSummary: Self.workoutSummaryName
        }
    }

    package static var allWireNames: [String] {
        SampleType.allCases.map(\.rawValue) + [locationName, workoutName, restingHeartRateName, workoutSummaryName]
    }
}

/// What a request asks for, or what a grant allows: kinds of data, a window of the history
/// (open ends allowed) and an end to the access (none: until revoked).
package struct AccessScope: Sendable, Equatable {
    package let kinds: [DataKind]
    package let dataFrom: Date?
    package let dataTo: Date?
    package let accessUntil: Date?

    /// Field by field: `types` must name at least one known kind, once each; the window must
    /// not be empty; the access must end in the future.
    package init(kinds: [DataKind], dataFrom: Date?, dataTo: Date?, accessUntil: Date?, now: Date = Date()) throws(AccessRequestError) {
        guard !kinds.isEmpty else { throw .invalid(field: "types", reason: "must name at least one data type") }
        guard Set(kinds).count == kinds.count else { throw .invalid(field: "types", reason: "must not name a type twice") }
        if let dataFrom, let dataTo, dataFrom >= dataTo { throw .invalid(field: "dataTo", reason: "must be later than dataFrom") }
        if let accessUntil, accessUntil <= now { throw .invalid(field: "accessUntil", reason: "must be in the future") }
        self.kinds = kinds
        self.dataFrom = dataFrom
        self.dataTo = dataTo
        self.accessUntil = accessUntil
    }

    init(record: AccessScopeRecord) {
        kinds = record.types.compactMap(DataKind.init(wireName:))
        dataFrom = record.dataFrom
        dataTo = record.dataTo
        accessUntil = record.until
    }

    var record: AccessScopeRecord {
        AccessScopeRecord(types: kinds.map(\.wireName), dataFrom: dataFrom, dataTo: dataTo, until: accessUntil)
    }

    /// What a scope is checked against: what was asked (a decision; any change's outer bound) or
    /// what is granted now (a change, which only narrows).
    package enum Bound: Sendable {
        case asked, granted
    }

    /// Whether this scope stays within `bound`: no other kinds, no wider window and — unless
    /// `end` is false — no later end. Throws naming the first field that would widen it.
    package func check(within bound: AccessScope, as kind: Bound = .asked, end: Bool = true) throws(AccessRequestError) {
        let word = kind == .asked ? "requested" : "granted"
        if let extra = kinds.first(where: { !bound.kinds.contains($0) }) {
            throw .widens(
                field: "types",
                reason: kind == .asked ? "\(extra.wireName) was not asked for" : "\(extra.wireName) is not granted: a change only narrows the types")
        }
        if let limit = bound.dataFrom, dataFrom.map({ $0 < limit }) ?? true {
            throw .widens(field: "dataFrom", reason: "must not be earlier than the \(word) dataFrom")
        }
        if let limit = bound.dataTo, dataTo.map({ $0 > limit }) ?? true {
            throw .widens(field: "dataTo", reason: "must not be later than the \(word) dataTo")
        }
        if end, let limit = bound.accessUntil, accessUntil.map({ $0 > limit }) ?? true {
            throw .widens(field: "accessUntil", reason: "must not be later than the \(word) accessUntil")
        }
    }
}

/// Why an access-request operation was refused.
package enum AccessRequestError: Error, Equatable {
    /// No such request for this caller (another party's or another person's is "no such" too).
    case notFound
    /// The party already has a pending request for this person.
    case duplicatePending
    /// The request is no longer in a state that allows the change.
    case wrongState(current: AccessStatus)
    /// A field of the request or decision is invalid.
    case invalid(field: String, reason: String)
    /// A narrowed grant would be wider than what was asked.
    case widens(field: String, reason: String)
    /// No organisation with that id.
    case unknownOrganisation
    /// The request is not an active grant (pending, denied, revoked, expired).
    case notGranted(status: AccessStatus)
    /// The grant is active but does not cover this kind of data.
    case notCovered(kind: String)
}
