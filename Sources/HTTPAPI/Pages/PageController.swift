import Data4HelpCore
import Foundation
import Hummingbird
import Mustache
import RunEvents

/// Server-rendered HTML pages (Mustache templates from `PAGES_DIR`; no build step, no CDN), and
/// the pages' scripts (`PAGES_DIR/*.js`, served as `/assets/<name>.js`: the pages' CSP allows
/// scripts from this origin only, never inline ones).
struct PageController {
    let library: MustacheLibrary
    let runs: RunEventService
    /// The scripts by file name (`run.js`), read at start.
    let scripts: [String: ByteBuffer]
    /// Leaflet and the tiles, for the spectators' map.
    var map = MapAssets()

    /// Reads every `*.js` of the directory.
    static func scripts(_ files: [String: Data]) -> [String: ByteBuffer] {
        files.filter { $0.key.hasSuffix(".js") }.mapValues { ByteBuffer(bytes: $0) }
    }

    /// Every `*.mustache` of the pages' files; a missing or broken template stops start-up.
    static func library(_ files: [String: Data]) throws -> MustacheLibrary {
        let sources = files.filter { $0.key.hasSuffix(".mustache") }
        guard !sources.isEmpty else { throw ConfigurationError("no page templates (PAGES_DIR or compiled in)") }
        var templates: [String: MustacheTemplate] = [:]
        for (file, data) in sources {
            templates[String(file.dropLast(".mustache".count))] = try MustacheTemplate(string: String(decoding: data, as: UTF8.self))
        }
        return MustacheLibrary(templates: templates)
    }

    func addRoutes(to router: some RouterMethods<AppRequestContext>) {
        router.get("assets/{file}") { _, context in
            guard let file = context.parameters.get("file"), let script = scripts[file] else { throw Problem.notFound("asset") }
            return Response(
                status: .ok,
                headers: [.contentType: "text/javascript; charset=utf-8", .cacheControl: "public, max-age=300"],
                body: .init(byteBuffer: script)
            )
        }
        router.get("assets/leaflet/{file}") { _, context in try leafletFile(context.parameters.get("file") ?? "") }
        router.get("assets/leaflet/images/{file}") { _, context in try leafletFile("images/" + (context.parameters.get("file") ?? "")) }
        // The spectators' page: the course and every runner, live, on the map's tiles when there are.
        router.get("runs/{runId}") { _, context -> HTML in
            let id = try RunEventController.runId(context)
            let (event, _) = try await runs.event(id)
            var values: [String: Any] = ["id": event.id.wireString, "name": event.name]
            if let tiles = map.tiles {
                values["map"] = tiles.templateValues
            }
            return HTML(library.render(values, withTemplate: "run") ?? "", imagesFrom: map.tiles?.origin)
        }
    }
}

extension PageController {
    private func leafletFile(_ path: String) throws -> Response {
        guard let file = map.leaflet[path] else { throw Problem.notFound("asset") }
        return Response(
            status: .ok, headers: [.contentType: file.type, .cacheControl: "public, max-age=86400"], body: .init(byteBuffer: file.bytes))
    }
}

/// An HTML page as a response.
struct HTML: ResponseGenerator {
    let text: String
    /// Another origin images may come from (the map's tiles).
    let imagesFrom: String?

    init(_ text: String, imagesFrom: String? = nil) {
        self.text = text
        self.imagesFrom = imagesFrom
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        response
    }

    var response: Response {
        Response(
            status: .ok,
            headers: [
                .contentType: "text/html; charset=utf-8",
                // Scripts from this origin only (no inline script, no eval); styles stay inline in the pages.
                .contentSecurityPolicy:
                    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self'\(imagesFrom.map { " " + $0 } ?? ""); connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            ],
            body: .init(byteBuffer: ByteBuffer(string: text))
        )
    }
}
