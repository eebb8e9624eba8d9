import Foundation
import Hummingbird
import Mustache
import RunEvents

/// Server-rendered HTML pages (Mustache templates from `PAGES_DIR`; no build step, no CDN).
struct PageController {
    let library: MustacheLibrary
    let runs: RunEventService

    /// Loads every `*.mustache` of the directory; a missing or broken template stops start-up.
    static func library(directory: String) throws -> MustacheLibrary {
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".mustache") }
        guard !files.isEmpty else { throw ConfigurationError("no page templates in PAGES_DIR (\(directory))") }
        var templates: [String: MustacheTemplate] = [:]
        for file in files {
            let text = try String(contentsOfFile: (directory as NSString).appendingPathComponent(file), encoding: .utf8)
            templates[String(file.dropLast(".mustache".count))] = try MustacheTemplate(string: text)
        }
        return MustacheLibrary(templates: templates)
    }

    func addRoutes(to router: some RouterMethods<AppRequestContext>) {
        // The spectators' page: the course and every runner, live.
        router.get("runs/{runId}") { _, context -> HTML in
            let id = try RunEventController.runId(context)
            let (event, _) = try await runs.event(id)
            return HTML(library.render(["id": event.id.wireString, "name": event.name], withTemplate: "run") ?? "")
        }
    }
}

/// An HTML page as a response.
struct HTML: ResponseGenerator {
    let text: String

    init(_ text: String) {
        self.text = text
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        response
    }

    var response: Response {
        Response(
            status: .ok,
            headers: [
                .contentType: "text/html; charset=utf-8",
                .contentSecurityPolicy: "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'",
            ],
            body: .init(byteBuffer: ByteBuffer(string: text))
        )
    }
}
