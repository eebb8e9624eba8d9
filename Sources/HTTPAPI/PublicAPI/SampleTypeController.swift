import HealthSharing
import Hummingbird
import Logging

/// `GET /api/types`: the catalogue of data types, with units and valid ranges. Public and
/// static, so phones and third parties may cache it.
struct SampleTypeController {
    func addRoutes(to router: some RouterMethods<AppRequestContext>) {
        let catalogue = Page(items: SampleType.allCases.map(SampleTypeBody.init), nextCursor: nil)
        router.get("api/types") { _, _ in
            EditedResponse(headers: [.cacheControl: "public, max-age=3600"], response: catalogue)
        }
    }
}

/// One data type as the catalogue shows it.
struct SampleTypeBody: Encodable, Sendable {
    let type: String
    /// Whether samples of this type cover an interval (`start`–`end`) rather than an instant.
    let interval: Bool
    /// `quantity` (a number in `unit`) or `category` (one of `values`).
    let valueKind: String
    let unit: String?
    let acceptedUnits: [String]?
    let minimum: Double?
    let maximum: Double?
    let values: [String]?

    init(_ type: SampleType) {
        self.type = type.rawValue
        interval = type.isInterval
        switch type.definition {
        case .quantity(let unit, let conversions, let range):
            valueKind = "quantity"
            self.unit = unit
            acceptedUnits = [unit] + conversions.map(\.unit)
            minimum = range.lowerBound
            maximum = range.upperBound
            values = nil
        case .category(let words):
            valueKind = "category"
            unit = nil
            acceptedUnits = nil
            minimum = nil
            maximum = nil
            values = words
        }
    }
}
