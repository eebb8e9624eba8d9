#if canImport(HealthKit)
public import Foundation
public import HealthKit

/// Feeds the sync engine from HealthKit with anchored queries, one per type: each call hands over
/// what was added since the anchor the engine keeps for that type, with the `HKSample`'s UUID as
/// the item's id, and the new anchor with it (saved only once the items are on the disk).
///
/// **Compiled on Apple platforms only and untested here**: this repository builds and tests on
/// Linux, where HealthKit does not exist. The engine it feeds is tested against a real server.
///
/// ```swift
/// let source = HealthKitSource(store: HKHealthStore())
/// try await store.requestAuthorization(toShare: [], read: HealthKitSource.readTypes)
/// for type in HealthKitSource.Kind.allCases { _ = try await source.sync(type, into: engine) }
/// try await engine.drain()
/// ```
/// Call it from an `HKObserverQuery`'s update handler (with background delivery enabled) so that
/// new readings go up soon after the watch writes them.
public final class HealthKitSource: @unchecked Sendable {
    /// The HealthKit types mapped to the server's, with the unit the server keeps.
    public enum Kind: String, CaseIterable, Sendable {
        case heartRate, stepCount, distance, bloodPressureSystolic, bloodPressureDiastolic, oxygenSaturation
        case bodyTemperature, bloodGlucose, respiratoryRate, bodyMass, activeEnergy, sleep

        var sampleType: HKSampleType {
            switch self {
            case .heartRate: HKQuantityType(.heartRate)
            case .stepCount: HKQuantityType(.stepCount)
            case .distance: HKQuantityType(.distanceWalkingRunning)
            case .bloodPressureSystolic: HKQuantityType(.bloodPressureSystolic)
            case .bloodPressureDiastolic: HKQuantityType(.bloodPressureDiastolic)
            case .oxygenSaturation: HKQuantityType(.oxygenSaturation)
            case .bodyTemperature: HKQuantityType(.bodyTemperature)
            case .bloodGlucose: HKQuantityType(.bloodGlucose)
            case .respiratoryRate: HKQuantityType(.respiratoryRate)
            case .bodyMass: HKQuantityType(.bodyMass)
            case .activeEnergy: HKQuantityType(.activeEnergyBurned)
            case .sleep: HKCategoryType(.sleepAnalysis)
            }
        }

        /// The server's unit and HealthKit's for it (oxygen saturation: HealthKit's fraction as %).
        var unit: (server: String, healthKit: HKUnit)? {
            switch self {
            case .heartRate: ("bpm", .count().unitDivided(by: .minute()))
            case .stepCount: ("count", .count())
            case .distance: ("m", .meter())
            case .bloodPressureSystolic, .bloodPressureDiastolic: ("mmHg", .millimeterOfMercury())
            case .oxygenSaturation: ("%", .percent())
            case .bodyTemperature: ("degC", .degreeCelsius())
            case .bloodGlucose: ("mg/dL", HKUnit(from: "mg/dL"))
            case .respiratoryRate: ("breaths/min", .count().unitDivided(by: .minute()))
            case .bodyMass: ("kg", .gramUnit(with: .kilo))
            case .activeEnergy: ("kcal", .kilocalorie())
            case .sleep: nil
            }
        }

        /// The contract's name of the type; every kind has one (same raw values), nil never traps.
        var serverType: Components.Schemas.SampleTypeName? { Components.Schemas.SampleTypeName(rawValue: rawValue) }
    }

    public static var readTypes: Set<HKObjectType> { Set(Kind.allCases.map(\.sampleType)) }

    private let store: HKHealthStore

    public init(store: HKHealthStore) { self.store = store }

    /// Hands over what HealthKit added for `kind` since the engine's anchor; returns how many.
    /// (Deleted samples are not sent: the server keeps what was shared until the person deletes it there.)
    public func sync(_ kind: Kind, into engine: SyncEngine) async throws -> Int {
        let source = "healthkit." + kind.rawValue
        let anchor = try await engine.anchor(for: source).flatMap {
            try NSKeyedUnarchiver.unarchivedObject(ofClass: HKQueryAnchor.self, from: $0)
        }
        let descriptor = HKAnchoredObjectQueryDescriptor(predicates: [.sample(type: kind.sampleType)], anchor: anchor)
        let result = try await descriptor.result(for: store)
        let items = result.addedSamples.compactMap { Self.item(from: $0, kind: kind) }
        let saved = try NSKeyedArchiver.archivedData(withRootObject: result.newAnchor, requiringSecureCoding: true)
        try await engine.enqueue(items, anchor: (source: source, value: saved))
        return items.count
    }

    static func item(from sample: HKSample, kind: Kind) -> SyncItem? {
        let device = sample.sourceRevision.source.name
        if let quantity = sample as? HKQuantitySample, let unit = kind.unit, let type = kind.serverType {
            let interval = kind == .stepCount || kind == .distance || kind == .activeEnergy
            return .sample(
                .init(
                    id: sample.uuid.uuidString, type: type, value: .number(quantity.quantity.doubleValue(for: unit.healthKit)),
                    unit: unit.server, start: sample.startDate, end: interval ? sample.endDate : nil, source: device))
        }
        if let category = sample as? HKCategorySample, kind == .sleep, let stage = Self.stage(category.value) {
            return .sample(
                .init(id: sample.uuid.uuidString, type: .sleep, value: .stage(stage), start: sample.startDate, end: sample.endDate, source: device))
        }
        return nil
    }

    static func stage(_ value: Int) -> String? {
        switch HKCategoryValueSleepAnalysis(rawValue: value) {
        case .inBed: "inBed"
        case .asleepUnspecified: "asleep"
        case .awake: "awake"
        case .asleepCore: "light"
        case .asleepDeep: "deep"
        case .asleepREM: "rem"
        default: nil
        }
    }
}
#endif
