import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// `/api/users/sources`: the devices that produced the caller's samples, most preferred first,
/// and the order in which they count where two measured the same minute.
struct SourceController {
    let preferences: SourcePreferences
    let body: JSONBody

    func addRoutes(to group: some RouterMethods<IndividualRequestContext>) {
        group.get("sources", use: list)
        group.put("sources/order", use: setOrder)
    }

    @Sendable func list(_ request: Request, context: IndividualRequestContext) async throws -> SourceListBody {
        SourceListBody(try await preferences.sources(of: context.individual))
    }

    /// `PUT /api/users/sources/order` with `{"order": [3, 1]}`: those first, in that order.
    @Sendable func setOrder(_ request: Request, context: IndividualRequestContext) async throws -> SourceListBody {
        let form = try await body.decode(SourceOrderForm.self, from: request, context: context)
        var fields = FieldValidator()
        var ids: [Int16] = []
        if let order = form.order {
            for (index, id) in order.enumerated() {
                guard let id = Int16(exactly: id), id >= 1 else {
                    fields.fail("order[\(index)]", "must be the id of one of your sources")
                    continue
                }
                ids.append(id)
            }
        } else {
            fields.fail("order", "is required: the ids of your sources, most preferred first")
        }
        try fields.finish()
        switch try await preferences.setOrder(ids, for: context.individual) {
        case .success(let sources):
            return SourceListBody(sources)
        case .failure(.tooMany):
            throw Problem.invalidField("order", "may name at most \(SourcePreferences.maximumOrdered) sources")
        case .failure(.repeated(let position)):
            throw Problem.invalidField("order[\(position)]", "names a source already earlier in the order")
        case .failure(.unknown(let position)):
            throw Problem.invalidField("order[\(position)]", "must be the id of one of your sources")
        }
    }
}

struct SourceOrderForm: Decodable {
    /// Whole numbers; range-checked above (a JSON number may be anything).
    var order: [Int64]?
}

struct SourceListBody: ResponseEncodable {
    let items: [SourceBody]

    /// Sources most preferred first, ranked 1, 2, …
    init(_ sources: [SampleSource]) {
        items = sources.enumerated().map { SourceBody($1, rank: $0 + 1) }
    }
}

/// A source on the wire (`Source` in the OpenAPI document).
struct SourceBody: Encodable {
    let id: Int16
    let name: String
    /// 1 for the most preferred.
    let rank: Int
    /// `individual` when the caller put it in order, else `default` (worn devices, then phones).
    let orderedBy: String

    init(_ source: SampleSource, rank: Int) {
        id = source.id
        name = source.name
        self.rank = rank
        orderedBy = source.orderedByIndividual ? "individual" : "default"
    }
}
