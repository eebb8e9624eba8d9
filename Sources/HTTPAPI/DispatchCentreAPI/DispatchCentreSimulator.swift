import AsyncHTTPClient
import Foundation
import HealthSharing
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import Synchronization

/// A small local dispatch centre for demos, tests and the benchmark (`data4help ems-sim`).
///
/// Accepts `POST /dispatches`, checks the signature with the shared secret (401 otherwise),
/// prints the call, and answers `200 { "reference" }`. A call repeated with the same
/// `Idempotency-Key` is answered with the same reference and not counted again — the centre's
/// half of "exactly once". With a callback base URL it then reports back as a real centre would:
/// acknowledged after `acknowledgeAfter`, resolved after `resolveAfter`, signed the same way.
package final class DispatchCentreSimulator: Sendable {
    /// One emergency as the centre saw it.
    package struct Dispatch: Sendable {
        package let incidentId: String
        package let reference: String
        /// When the first call for it arrived.
        package let receivedAt: ContinuousClock.Instant
        /// Every call for it, repeats included.
        package var calls: Int
        /// The first call's body.
        package let body: [UInt8]

        package var json: [String: Any] { ((try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]) ?? [:] }
    }

    package struct Reports: Sendable {
        package var callbackBase: String
        package var acknowledgeAfter: Duration
        package var resolveAfter: Duration?

        package init(callbackBase: String, acknowledgeAfter: Duration, resolveAfter: Duration?) {
            self.callbackBase = callbackBase
            self.acknowledgeAfter = acknowledgeAfter
            self.resolveAfter = resolveAfter
        }
    }

    private struct State {
        var dispatches: [String: Dispatch] = [:]
        var order: [String] = []
        var refusals = 0
    }

    let secret: String
    let reports: Reports?
    let print: @Sendable (String) -> Void
    /// Called on the first call of every incident, as it arrives (the benchmark's stopwatch).
    let onDispatch: @Sendable (Dispatch) -> Void
    private let state = Mutex(State())

    package init(
        secret: String, reports: Reports? = nil, print: @escaping @Sendable (String) -> Void = { _ in },
        onDispatch: @escaping @Sendable (Dispatch) -> Void = { _ in }
    ) {
        self.secret = secret
        self.reports = reports
        self.print = print
        self.onDispatch = onDispatch
    }

    /// First calls in arrival order.
    package var dispatches: [Dispatch] { state.withLock { state in state.order.compactMap { state.dispatches[$0] } } }
    /// Calls refused for a bad signature.
    package var refusals: Int { state.withLock { $0.refusals } }

    /// The simulator as an application; run it with `runService()`.
    package func application(host: String, port: Int, logger: Logger) -> some ApplicationProtocol {
        let router = Router()
        router.post("dispatches") { request, _ -> Response in
            let body = Array(try await request.body.collect(upTo: 1024 * 1024).readableBytesView)
            guard let signature = request.headers[.init(WebhookSignature.header)!],
                WebhookSignature.verify(header: signature, secret: self.secret, body: body),
                let key = request.headers[.init("Idempotency-Key")!], !key.isEmpty
            else {
                self.state.withLock { $0.refusals += 1 }
                return Response(status: .unauthorized)
            }
            let (dispatch, first) = self.receive(key: key, body: body)
            if first {
                self.onDispatch(dispatch)
                self.describe(dispatch)
                if let reports = self.reports { Task { await self.report(dispatch, reports: reports, logger: logger) } }
            } else {
                self.print("repeat call for incident \(key) (call \(dispatch.calls)); already handled as \(dispatch.reference)")
            }
            let answer = try JSONSerialization.data(withJSONObject: ["reference": dispatch.reference])
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: answer)))
        }
        return Application(router: router, configuration: .init(address: .hostname(host, port: port), serverName: "ems-sim"), logger: logger)
    }

    /// Serves until the task is cancelled or the process is told to stop (SIGTERM, SIGINT).
    package func run(host: String, port: Int, logger: Logger) async throws {
        try await application(host: host, port: port, logger: logger).runService()
    }

    private func receive(key: String, body: [UInt8]) -> (Dispatch, first: Bool) {
        let now = ContinuousClock.now
        return state.withLock { state in
            if var known = state.dispatches[key] {
                known.calls += 1
                state.dispatches[key] = known
                return (known, false)
            }
            let dispatch = Dispatch(
                incidentId: key, reference: String(format: "EMS-%06d", state.order.count + 1), receivedAt: now, calls: 1, body: body
            )
            state.dispatches[key] = dispatch
            state.order.append(key)
            return (dispatch, true)
        }
    }

    private func describe(_ dispatch: Dispatch) {
        let call = dispatch.json
        let person = call["person"] as? [String: Any] ?? [:]
        let location = call["location"] as? [String: Any] ?? [:]
        let vitals = call["vitals"] as? [String: Any] ?? [:]
        let values = (vitals["readings"] as? [[String: Any]] ?? []).compactMap { $0["value"] as? Double }.map { $0.formatted() }
        let place =
            (location["stale"] as? Bool ?? true)
            ? "location stale, home area \(location["homeArea"] as? String ?? "?")"
            : "at \(location["latitude"] as? Double ?? 0), \(location["longitude"] as? Double ?? 0) (±\(location["accuracy"] as? Double ?? 0) m)"
        print(
            """
            \(dispatch.reference) incident \(dispatch.incidentId): \(person["name"] as? String ?? "?"), \(person["age"] as? Int ?? 0), \
            \(person["sex"] as? String ?? "?"); \(vitals["type"] as? String ?? "?") \(values.joined(separator: ", ")) \(vitals["unit"] as? String ?? ""); \(place)
            """)
    }

    /// Reports back to the platform, retrying a few times (it is a simulator, not a centre).
    private func report(_ dispatch: Dispatch, reports: Reports, logger: Logger) async {
        var steps: [(String, Duration)] = [("acknowledge", reports.acknowledgeAfter)]
        if let resolve = reports.resolveAfter { steps.append(("resolve", resolve)) }
        for (verb, delay) in steps {
            try? await Task.sleep(for: delay)
            let body = Array(#"{"reference":"\#(dispatch.reference)"}"#.utf8)
            let path = "/api/dispatch/incidents/\(dispatch.incidentId)/\(verb)"
            var request = HTTPClientRequest(url: "\(reports.callbackBase)\(path)")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(
                name: WebhookSignature.header,
                value: WebhookSignature.header(secret: secret, timestamp: Int64(Date().timeIntervalSince1970), request: "POST \(path)", body: body)
            )
            request.body = .bytes(ByteBuffer(bytes: body))
            for attempt in 1...5 {
                if let response = try? await HTTPClient.shared.execute(request, timeout: .seconds(5)) {
                    _ = try? await response.body.collect(upTo: 64 * 1024)
                    print("\(dispatch.reference) \(verb)d → platform answered \(response.status.code)")
                    break
                }
                try? await Task.sleep(for: .seconds(attempt))
            }
        }
    }
}
