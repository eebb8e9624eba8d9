import HTTPTypes
import Hummingbird
import Synchronization

/// Which methods each route template accepts, so that a known path asked with another method
/// gets `405 Method Not Allowed` with an `Allow` header (RFC 9110 §15.5.6) instead of a 404.
///
/// Hummingbird's router does not expose its routes, so `RecordingRouter` notes every route
/// as it is registered; the table is then only read.
final class RouteTable: Sendable {
    private let routes = Mutex<[(segments: [String], method: HTTPRequest.Method)]>([])

    func record(_ path: String, _ method: HTTPRequest.Method) {
        let segments = path.split(separator: "/").map(String.init)
        routes.withLock { $0.append((segments, method)) }
    }

    /// The methods accepted at this request path; empty when no route template matches it.
    ///
    /// As the router does, a literal segment wins over a parameter at the same place:
    /// `/me/runs/course` is `runs/course` (POST) and not `runs/{runId}` (GET, POST).
    func allowedMethods(for path: String) -> [HTTPRequest.Method] {
        let segments = path.split(separator: "/").map(String.init)
        var matching = routes.withLock { routes in routes.filter { Self.matches($0.segments, segments) } }
        for index in segments.indices where matching.contains(where: { !Self.isParameter($0.segments[index]) }) {
            matching.removeAll { Self.isParameter($0.segments[index]) }
        }
        var methods: [HTTPRequest.Method] = []
        for route in matching where !methods.contains(route.method) { methods.append(route.method) }
        if methods.contains(.get) { methods.append(.head) }
        return methods
    }

    private static func isParameter(_ segment: String) -> Bool {
        segment.hasPrefix("{") && segment.hasSuffix("}")
    }

    private static func matches(_ template: [String], _ path: [String]) -> Bool {
        template.count == path.count
            && zip(template, path).allSatisfy { pattern, segment in
                isParameter(pattern) || pattern == segment
            }
    }
}

/// A router that records each route in a `RouteTable` and hands it on to Hummingbird's router.
/// Groups made from it record their full paths, because a group registers through its parent.
final class RecordingRouter<Context: RequestContext>: RouterMethods {
    let router: Router<Context>
    let table: RouteTable

    init(router: Router<Context>, table: RouteTable) {
        self.router = router
        self.table = table
    }

    @discardableResult
    func on<Responder: HTTPResponder>(_ path: RouterPath, method: HTTPRequest.Method, responder: Responder) -> Self
    where Responder.Context == Context {
        table.record(path.description, method)
        router.on(path, method: method, responder: responder)
        return self
    }

    @discardableResult
    func add(middleware: any MiddlewareProtocol<Request, Response, Context>) -> Self {
        router.add(middleware: middleware)
        return self
    }
}
