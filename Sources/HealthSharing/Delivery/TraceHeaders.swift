import Instrumentation
import NIOHTTP1
import ServiceContextModule

/// Writes the current trace context (the webhook attempt's, the SOS dispatch's span) into an
/// outgoing request's headers as W3C `traceparent` — nothing when tracing is off — so that the
/// receiver's own trace continues ours.
///
/// Why not AsyncHTTPClient's tracing: its request span records the full URL with its query, and a
/// webhook URL is the third party's, sometimes with a secret in it. The webhook and dispatch
/// clients switch it off (`configuration.tracing.tracer = nil`), and the attempt's span, which
/// records no URL, is the receiver's parent.
package enum TraceHeaders {
    package static func inject(into headers: inout HTTPHeaders) {
        guard let context = ServiceContext.current else { return }
        InstrumentationSystem.instrument.inject(context, into: &headers, using: Injector())
    }

    private struct Injector: Instrumentation.Injector {
        func inject(_ value: String, forKey key: String, into headers: inout HTTPHeaders) {
            headers.replaceOrAdd(name: key, value: value)
        }
    }
}
