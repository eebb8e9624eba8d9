import Foundation
import UntrustedXML

/// Reads the `export.xml` the iPhone Health app writes ("Export All Health Data"), fed in pieces
/// as it arrives: files of 1–4 GB and 5–20 million records are normal, so no document is built;
/// `XMLReader` holds one element at a time.
///
/// Each `Record` of a type we store becomes an upload item (`RawIngestItem`) in our units, which
/// the Data Manager's rules then check like any upload; records of other types are counted by
/// type and skipped; `Workout` elements become `ImportedWorkout`s. A `Correlation` (blood
/// pressure) repeats the `Record`s it groups, which the export also lists on their own: the
/// item's id — its identity: type, source, start, end, value — makes the repeat a duplicate.
package struct AppleHealthExportReader {
    /// What one element of the export is to us.
    package typealias Item = ImportedItem

    private var xml: XMLReader
    private var sawHealthData = false
    /// Elements open, as this reader counts them.
    private var depth = 0
    /// The workout being read, until its end tag (its statistics and route are children).
    private var workout: ImportedWorkout?
    /// Items read inside a child of `HealthData` not closed yet: handed out when it closes, so
    /// that everything handed out lies before `checkpoint` and nothing after it.
    private var pending: [Item] = []

    package init() {
        xml = XMLReader()
        xml.checkpointDepth = 1
    }

    /// A reader that goes on from a checkpoint of an earlier one: it is fed the export's bytes
    /// from `checkpoint.offset` on.
    package init(resumingAt checkpoint: XMLReader.Position) throws(XMLReadError) {
        guard checkpoint.open == ["HealthData"] else {
            throw XMLReadError(reason: "the checkpoint is not between two records of an export", line: checkpoint.line)
        }
        xml = XMLReader(resumingAt: checkpoint)
        xml.checkpointDepth = 1
        sawHealthData = true
        depth = 1
    }

    /// Where the next reader goes on from if this one stops now: after the last element closed
    /// between two children of `HealthData`. Every item handed out lies before it.
    package var checkpoint: XMLReader.Position? { xml.checkpoint }

    /// Reads what `bytes`, after the ones fed before, complete.
    package mutating func feed(_ bytes: some Sequence<UInt8>, _ handle: (Item) throws -> Void) throws {
        // The XML reader is taken out while it calls back into `read`, which changes the rest of
        // self (and swapped, not copied: a copy would copy its buffer at the next write).
        var xml = XMLReader()
        swap(&xml, &self.xml)
        defer { swap(&xml, &self.xml) }
        try xml.feed(bytes) { event in try self.read(event, handle) }
    }

    /// Reads the rest: the document must be complete.
    package mutating func finish(_ handle: (Item) throws -> Void) throws {
        var xml = XMLReader()
        swap(&xml, &self.xml)
        defer { swap(&xml, &self.xml) }
        try xml.finish { event in try self.read(event, handle) }
        guard sawHealthData else { throw XMLReadError(reason: "this is not an Apple Health export (no <HealthData> element)", line: xml.line) }
    }

    /// The line the reader has reached, for progress and errors.
    package var line: Int { xml.line }

    private mutating func read(_ event: XMLReader.Event, _ handle: (Item) throws -> Void) throws {
        switch event {
        case .start(let name, let attributes):
            depth += 1
            switch name {
            case "HealthData" where depth == 1:
                sawHealthData = true
            case "Record" where sawHealthData:
                pending.append(Self.item(attributes))
            case "Workout" where depth == 2:
                workout = ImportedWorkout(attributes)
            case "WorkoutStatistics":
                workout?.add(statistics: attributes)
            case "FileReference":
                if let path = attributes["path"], workout != nil { workout?.routeFiles.append(path) }
            default:
                break
            }
        case .end(let name):
            depth -= 1
            if name == "Workout", depth == 1, let finished = workout {
                workout = nil
                pending.append(.workout(finished))
            }
            if depth == 1 {
                for item in pending { try handle(item) }
                pending.removeAll(keepingCapacity: true)
            }
        case .text:
            break
        }
    }

    // MARK: - Records

    /// A `Record`'s attributes as an item.
    static func item(_ attributes: XMLAttributes) -> Item {
        let type = attributes["type"] ?? ""
        guard let mapping = AppleHealthType.mapping[type] else { return .skipped(type: type) }
        guard let start = attributes["startDate"].flatMap(AppleHealthDate.rfc3339) else {
            return .unreadable(type: type, reason: "startDate is missing or not a date such as 2023-05-01 08:30:00 +0200")
        }
        let end = attributes["endDate"].flatMap(AppleHealthDate.rfc3339)
        let source = attributes["sourceName"].map { String($0.prefix(200)) }
        var item = RawIngestItem()
        item.type = .known(mapping.type)
        let endText = mapping.type.isInterval ? (end ?? start) : nil
        item.start = RawInstant(start)
        item.end = endText.map { RawInstant($0) }
        item.source = source
        let valueText = attributes["value"] ?? ""
        switch mapping.value {
        case .category(let stages):
            guard let stage = stages[valueText] else {
                return .unreadable(type: type, reason: "the value \(valueText.prefix(60)) is not a known stage")
            }
            item.value = .word(stage.rawValue)
        case .quantity(let units):
            let unit = attributes["unit"] ?? ""
            guard let number = Double(valueText), number.isFinite else {
                return .unreadable(type: type, reason: "the value \(valueText.prefix(60)) is not a number")
            }
            guard let conversion = units[unit] ?? AppleHealthType.molarConversion(unit, for: mapping.type) else {
                return .unreadable(type: type, reason: "the unit \(unit.prefix(60)) is not read for \(mapping.type.rawValue)")
            }
            item.value = .number(number * conversion.factor)
            item.unit = conversion.unit
        }
        item.id = AppleHealthType.identity(of: item, start: start, end: endText, value: valueText)
        return .sample(item)
    }
}

/// How an Apple Health type maps to ours.
enum AppleHealthType {
    /// A unit of the export as one of ours: our value = theirs × `factor`, in `unit`.
    struct Conversion: Equatable {
        let unit: String
        var factor: Double = 1
    }

    enum Value {
        /// Units the export writes for the type.
        case quantity([String: Conversion])
        /// Category values as our stages.
        case category([String: SleepStage])
    }

    struct Mapping {
        let type: SampleType
        let value: Value
    }

    static let mapping: [String: Mapping] = [
        "HKQuantityTypeIdentifierHeartRate": Mapping(type: .heartRate, value: .quantity(["count/min": Conversion(unit: "bpm")])),
        "HKQuantityTypeIdentifierStepCount": Mapping(type: .stepCount, value: .quantity(["count": Conversion(unit: "count")])),
        "HKQuantityTypeIdentifierDistanceWalkingRunning": Mapping(type: .distance, value: .quantity(distances)),
        "HKQuantityTypeIdentifierBloodPressureSystolic": Mapping(type: .bloodPressureSystolic, value: .quantity(["mmHg": Conversion(unit: "mmHg")])),
        "HKQuantityTypeIdentifierBloodPressureDiastolic": Mapping(
            type: .bloodPressureDiastolic, value: .quantity(["mmHg": Conversion(unit: "mmHg")])),
        // A fraction in the export: 0.97 is 97 %.
        "HKQuantityTypeIdentifierOxygenSaturation": Mapping(type: .oxygenSaturation, value: .quantity(["%": Conversion(unit: "%", factor: 100)])),
        "HKQuantityTypeIdentifierBodyTemperature": Mapping(
            type: .bodyTemperature, value: .quantity(["degC": Conversion(unit: "degC"), "degF": Conversion(unit: "degF")])
        ),
        // mmol/L is written with the molar mass: `mmol<180.15588000005408>/L` (see molarConversion).
        "HKQuantityTypeIdentifierBloodGlucose": Mapping(type: .bloodGlucose, value: .quantity(["mg/dL": Conversion(unit: "mg/dL")])),
        "HKQuantityTypeIdentifierRespiratoryRate": Mapping(type: .respiratoryRate, value: .quantity(["count/min": Conversion(unit: "breaths/min")])),
        "HKQuantityTypeIdentifierBodyMass": Mapping(
            type: .bodyMass,
            value: .quantity(["kg": Conversion(unit: "kg"), "lb": Conversion(unit: "lb"), "g": Conversion(unit: "kg", factor: 0.001)])
        ),
        "HKQuantityTypeIdentifierActiveEnergyBurned": Mapping(
            type: .activeEnergy,
            value: .quantity(["kcal": Conversion(unit: "kcal"), "Cal": Conversion(unit: "kcal"), "kJ": Conversion(unit: "kJ")])
        ),
        "HKCategoryTypeIdentifierSleepAnalysis": Mapping(
            type: .sleep,
            value: .category([
                "HKCategoryValueSleepAnalysisInBed": .inBed,
                "HKCategoryValueSleepAnalysisAsleep": .asleep,  // before iOS 16
                "HKCategoryValueSleepAnalysisAsleepUnspecified": .asleep,
                "HKCategoryValueSleepAnalysisAwake": .awake,
                "HKCategoryValueSleepAnalysisAsleepCore": .light,
                "HKCategoryValueSleepAnalysisAsleepDeep": .deep,
                "HKCategoryValueSleepAnalysisAsleepREM": .rem,
            ])),
    ]

    static let distances: [String: Conversion] = [
        "m": Conversion(unit: "m"), "km": Conversion(unit: "m", factor: 1000), "mi": Conversion(unit: "m", factor: 1609.344),
        "ft": Conversion(unit: "m", factor: 0.3048), "yd": Conversion(unit: "m", factor: 0.9144), "cm": Conversion(unit: "m", factor: 0.01),
    ]

    /// `mmol<M>/L`, HealthKit's millimoles per litre of a substance of molar mass M g/mol, as
    /// mg/dL: 1 mmol/L = M/10 mg/dL (glucose: M = 180.156, 1 mmol/L = 18.0156 mg/dL).
    static func molarConversion(_ unit: String, for type: SampleType) -> Conversion? {
        guard type == .bloodGlucose, unit.hasPrefix("mmol<"), unit.hasSuffix(">/L"),
            let mass = Double(unit.dropFirst(5).dropLast(3)), (1...10_000).contains(mass)
        else { return nil }
        return Conversion(unit: "mg/dL", factor: mass / 10)
    }

    /// A stable id for an imported record, from what makes it the same record: its type, source,
    /// start, end and value as the export wrote it. Importing the same export twice, or two
    /// exports that overlap, stores each record once.
    static func identity(of item: RawIngestItem, start: String, end: String?, value: String) -> String {
        ImportIdentity.digest([item.type?.name ?? "", item.source ?? "", start, end ?? "", value], prefix: "ah:")
    }
}

/// Apple Health's dates: `2023-05-01 08:30:00 +0200`.
enum AppleHealthDate {
    /// The date as RFC 3339 (`2023-05-01T08:30:00+02:00`), or nil if it has another shape. The
    /// string is written in place: an import converts two or three per record.
    static func rfc3339(_ text: String) -> String? {
        var text = text
        return text.withUTF8 { bytes -> String? in
            guard bytes.count == 25, bytes[10] == 0x20, bytes[19] == 0x20, bytes[20] == UInt8(ascii: "+") || bytes[20] == UInt8(ascii: "-"),
                bytes[21...24].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
            else { return nil }
            return String(unsafeUninitializedCapacity: 25) { out in
                for position in 0..<19 { out[position] = bytes[position] }  // `2023-05-01 08:30:00`
                out[10] = UInt8(ascii: "T")
                for position in 19..<22 { out[position] = bytes[position + 1] }  // `+02`
                out[22] = UInt8(ascii: ":")
                out[23] = bytes[23]
                out[24] = bytes[24]
                return 25
            }
        }
    }
}
