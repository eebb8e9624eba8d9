import Data4HelpCore
import Foundation
import HealthSharing
import Hummingbird

/// `/me/imports`: import a file from the browser — the page's script sends it as it is (the
/// same `POST` as the API's, with an upload progress bar), then follows the import as it is read
/// (`/me/imports/{id}/status`, the API's JSON) — and the history of my imports with their figures.
struct MeImportPages {
    /// Where the page's script posts the file (exempt from the request timeout, like the API's uploads).
    static let uploadPath = "/me/imports"

    let site: PortalSite
    let imports: ImportService

    func addRoutes(to group: some RouterMethods<AppRequestContext>) {
        group.get("imports") { _, context in
            let list = try await imports.list(for: try context.signedInIndividual())
            return try await site.page(
                "me-imports", title: "Import my data", context,
                values: [
                    "imports": list.map(Self.shown), "hasImports": !list.isEmpty,
                ])
        }
        // The script's upload: the file is the body, the CSRF token in `X-CSRF-Token`.
        group.post("imports") { request, context in
            try await ImportController(imports: imports).create(request, for: try context.signedInIndividual())
        }
        group.get("imports/{importId}/status") { _, context -> ImportBody in
            guard let id = context.parameters.get("importId", as: UUID.self),
                let record = try await imports.find(id, for: try context.signedInIndividual())
            else { throw Problem.notFound("import") }
            return ImportBody(record)
        }
    }

    /// One import as the history table shows it.
    private static func shown(_ record: ImportRecord) -> [String: Any] {
        let figures = record.result
        let types = figures.types.sorted { $0.key < $1.key }.map { name, counts in
            ["name": name, "accepted": counts.accepted.formatted(), "duplicates": counts.duplicates.formatted()]
        }
        return [
            "id": record.publicId.wireString, "format": record.format.rawValue, "state": record.state.rawValue,
            "created": PortalPages.shown(record.createdAt), "records": record.records.formatted(),
            "types": types, "failure": record.failure ?? "", "hasFailure": record.failure != nil,
        ]
    }
}
