import DatabaseLink
import HTTPTypes
import Hummingbird
import Instrumentation
import ServiceContextModule
import Tracing

/// A trace span per request, named after its route template (`/api/users/requests/{requestId}`),
/// continuing the caller's trace when it sends W3C `traceparent`. Only with tracing on
/// (`TraceSpans.isOn`); off, a request pays one atomic load.
///
/// Not Hummingbird's `TracingMiddleware`: it records the URL's path and query and chosen headers,
/// and ours carry secrets — a share link's token is in its path, a confirmation token in a query.
/// The span holds the method, the route template and the status, nothing a caller sent.
struct RequestTracingMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard TraceSpans.isOn else { return try await next(request, context) }
        var parent = ServiceContext.current ?? .topLevel
        InstrumentationSystem.instrument.extract(request.headers, into: &parent, using: HTTPFieldsExtractor())
        let span = startSpan("HTTP \(request.method.rawValue)", context: parent, ofKind: .server)
        span.attributes["http.request.method"] = request.method.rawValue
        do {
            let response = try await ServiceContext.$current.withValue(span.context) {
                try await next(request, context)
            }
            if let route = context.endpointPath {
                span.operationName = "\(request.method.rawValue) \(route)"
                span.attributes["http.route"] = route
            }
            span.attributes["http.response.status_code"] = Int(response.status.code)
            if response.status.code >= 500 { span.setStatus(.init(code: .error)) }
            // The span ends with the handler: a stream's (server-sent events, a WebSocket) when
            // its response starts, not when it closes hours later.
            span.end()
            return response
        } catch {
            span.recordError(error)
            span.end()
            throw error
        }
    }

    private struct HTTPFieldsExtractor: Extractor {
        func extract(key: String, from fields: HTTPFields) -> String? {
            HTTPField.Name(key).flatMap { fields[$0] }
        }
    }
}

/// The current trace's id — 32 hex digits, as `traceparent` carries it — when tracing is on and a
/// span is current: for problem bodies (`traceId`), so that a user's report finds the trace.
enum TraceIdentity {
    static var current: String? {
        guard TraceSpans.isOn, let context = ServiceContext.current else { return nil }
        var carrier: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &carrier, using: DictionaryInjector())
        let fields = carrier["traceparent"]?.split(separator: "-") ?? []
        guard fields.count == 4, fields[1].utf8.count == 32 else { return nil }
        return String(fields[1])
    }

    private struct DictionaryInjector: Injector {
        func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
    }
}
