import AsyncHTTPClient
import Data4HelpCore
import DatabaseLink
import Foundation
import HealthSharing
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// The dispatch centre's answer to a call it accepted.
package struct DispatchReceipt: Sendable, Equatable {
    /// The centre's own case number, if it gave one.
    package var reference: String?

    package init(reference: String?) {
        self.reference = reference
    }
}

/// Why a dispatch attempt did not get through (secret-free, for the incident's record).
package struct DispatchFailure: Error, Sendable, Equatable {
    package var reason: String

    package init(_ reason: String) {
        self.reason = reason
    }
}

/// Places an emergency call with a dispatch centre. Implementations answer only once the centre
/// has accepted the call and throw `DispatchFailure` otherwise; the caller retries. A repeated
/// call for the same incident must be recognisable by `call.incidentId`.
package protocol EmergencyDispatcher: Sendable {
    func dispatch(_ call: EmergencyCall) async throws(DispatchFailure) -> DispatchReceipt
}

/// The dispatch centre reached over HTTPS: POSTs the call as JSON, signed like our webhooks
/// (`Data4Help-Signature` with the shared secret), with `Idempotency-Key: <incident id>`; any
/// 2xx is the acceptance, optionally with `{ "reference": "…" }`.
package struct HTTPEmergencyDispatcher: EmergencyDispatcher {
    let url: String
    let secret: String
    let timeout: Duration
    let client: HTTPClient

    /// `client` is owned by the caller (shut it down after use).
    package init(url: String, secret: String, timeout: Duration, client: HTTPClient) {
        self.url = url
        self.secret = secret
        self.timeout = timeout
        self.client = client
    }

    package func dispatch(_ call: EmergencyCall) async throws(DispatchFailure) -> DispatchReceipt {
        let body: [UInt8]
        do { body = try call.json() } catch { throw DispatchFailure("the call could not be encoded") }
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "Data4Help-AutomatedSOS/1")
        request.headers.add(name: "Idempotency-Key", value: call.incidentId.uuidString.lowercased())
        request.headers.add(
            name: WebhookSignature.header,
            value: WebhookSignature.header(secret: secret, timestamp: Int64(Date().timeIntervalSince1970), body: body)
        )
        TraceHeaders.inject(into: &request.headers)
        request.body = .bytes(ByteBuffer(bytes: body))
        let response: HTTPClientResponse
        let answer: ByteBuffer
        do {
            response = try await client.execute(request, timeout: .init(timeout))
            answer = try await response.body.collect(upTo: 64 * 1024)
        } catch let error as HTTPClientError where error == .readTimeout || error == .deadlineExceeded {
            throw DispatchFailure("timed out")
        } catch {
            throw DispatchFailure(String(String(describing: error).prefix(200)))
        }
        guard (200..<300).contains(response.status.code) else { throw DispatchFailure("answered \(response.status.code)") }
        let reference = (try? JSONSerialization.jsonObject(with: Data(answer.readableBytesView)) as? [String: Any])?["reference"] as? String
        return DispatchReceipt(reference: reference.map { String($0.prefix(200)) })
    }
}

/// The production wiring: an HTTP client of its own, `HTTPEmergencyDispatcher` over it, and the
/// dispatch loop (`SOSDispatchService`) using it, run as one service.
package struct HTTPDispatchCentreService: Service {
    let url: String
    let secret: String
    let timeout: Duration
    let database: Database
    let signal: ChangeSignal
    let schemaReady: StartupGate
    let logger: Logger

    package init(
        url: String, secret: String, timeout: Duration, database: Database, signal: ChangeSignal, schemaReady: StartupGate, logger: Logger
    ) {
        self.url = url
        self.secret = secret
        self.timeout = timeout
        self.database = database
        self.signal = signal
        self.schemaReady = schemaReady
        self.logger = logger
    }

    package func run() async throws {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(1), read: .init(timeout)))
        configuration.connectionPool.retryConnectionEstablishment = false  // our retries, our backoff
        configuration.tracing.tracer = nil  // our span, no URL recorded (see TraceHeaders)
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        var settings = SOSDispatchSettings()
        settings.timeout = timeout
        let service = SOSDispatchService(
            database: database, dispatcher: HTTPEmergencyDispatcher(url: url, secret: secret, timeout: timeout, client: client),
            signal: signal, schemaReady: schemaReady, settings: settings, logger: logger
        )
        do {
            try await service.run()
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }
}
