import AccessManager
import DatabaseLink
import Foundation
import HealthSharing
import Hummingbird

/// `/api/thirdparties/requests/{requestId}/data[/locations]`: a party pulls the data of an active
/// grant — granted types only, within the granted window. Same query and page shape as the
/// individual's own listings.
struct GrantedDataController {
    let granted: GrantedDataReader

    func addRoutes(to group: some RouterMethods<ThirdPartyRequestContext>) {
        group.get("requests/{requestId}/data") { request, context -> Page<SampleBody> in
            let id = try AccessScopeFields.requestId(context.parameters)
            var fields = FieldValidator()
            let range = TimeRangeQuery(request, fields: &fields)
            let types = UserDataController.types(request, fields: &fields)
            let after = fields.optional("cursor", range.cursor) { (raw: String) throws(InvalidValue) in
                try OwnDataCursor.decodeSample(raw, order: range.order)
            }
            try fields.finish()
            let page = try await granted.samples(
                for: context.principal, request: id, types: types, from: range.from, to: range.to,
                order: range.order, limit: range.limit, after: after
            )
            return Page(items: page.items.map(SampleBody.init), nextCursor: page.next.map { OwnDataCursor.encode($0, order: range.order) })
        }
        group.get("requests/{requestId}/data/locations") { request, context -> Page<LocationFixBody> in
            let id = try AccessScopeFields.requestId(context.parameters)
            var fields = FieldValidator()
            let range = TimeRangeQuery(request, fields: &fields)
            let after = fields.optional("cursor", range.cursor) { (raw: String) throws(InvalidValue) in
                try OwnDataCursor.decodeLocation(raw, order: range.order)
            }
            try fields.finish()
            let page = try await granted.locations(
                for: context.principal, request: id, from: range.from, to: range.to, order: range.order, limit: range.limit, after: after
            )
            return Page(items: page.items.map(LocationFixBody.init), nextCursor: page.next.map { OwnDataCursor.encode($0, order: range.order) })
        }
    }
}

/// One entry of the individual's access log.
struct DisclosureBody: Encodable, Sendable {
    struct Organisation: Encodable, Sendable {
        let id: String
        let name: String
    }

    let at: Date
    let organisation: Organisation
    let requestId: String
    let channel: String
    let types: [String]
    let itemCount: Int

    init(_ record: DisclosureRecord) {
        at = record.at
        organisation = Organisation(id: record.organisationPublicId.wireString, name: record.organisationName)
        requestId = record.requestPublicId.wireString
        channel = record.channel
        types = record.types
        itemCount = record.itemCount
    }
}
