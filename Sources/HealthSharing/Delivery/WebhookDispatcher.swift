import AsyncHTTPClient
import Data4HelpCore
import DatabaseLink
import Foundation
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization
import Tracing

/// Turns a claimed delivery (and the party event it carries, if any) into the JSON body POSTed.
/// The HTTP layer provides it: the body is in the API's wire format.
package protocol WebhookBodyEncoder: Sendable {
    func body(for delivery: ClaimedDelivery, event: PartyEvent?) throws -> [UInt8]
}

/// How many of something are under way now (entered and not yet left), for a gauge.
package final class InFlightCount: Sendable {
    private let count = Atomic<Int>(0)

    package init() {}

    package func enter() { count.add(1, ordering: .relaxed) }
    package func leave() { count.subtract(1, ordering: .relaxed) }
    package var value: Int { count.load(ordering: .relaxed) }
}

/// Settings of webhook delivery.
package struct WebhookDeliverySettings: Sendable {
    /// An answer must arrive within this; the lease of an attempt is a little longer.
    package var timeout: Duration = .seconds(10)
    /// Attempts per round (a round starts at creation and at every redelivery).
    package var maxAttempts = 8
    /// Waits after the 1st … 7th failed attempt (±20 % jitter): 1 min, 5 min, 30 min, 1 h, 3 h,
    /// 6 h, 12 h — the 8th attempt comes about 23 h after the first.
    package var backoff: [Duration] = [60, 300, 1_800, 3_600, 10_800, 21_600, 43_200].map { .seconds($0) }
    /// Concurrent attempts per instance.
    package var workers = 8
    /// How often idle workers look for due retries when no notification woke them.
    package var pollInterval: Duration = .seconds(1)
    /// Response bodies are read up to this many bytes and then dropped.
    package var responseLimit = 64 * 1024
    package var allowPrivateNetworks = false

    package init() {}

    var lease: Duration { timeout * 2 + .seconds(5) }
}

/// Delivers the webhook outbox (`webhook_deliveries`), at least once, from every instance.
///
/// Workers claim due deliveries (a lease in PostgreSQL, `SKIP LOCKED`), build the body from the
/// event as it is now (a data event whose grant has ended is cancelled, not sent), sign it, POST
/// it, and record the attempt: a 2xx ends it, anything else schedules the next attempt with
/// exponential backoff and jitter until the round's last attempt fails. An instance that dies
/// mid-attempt leaves its lease to expire; the delivery is then attempted again, with the same
/// delivery id for the receiver to de-duplicate on. Deliveries of one grant go one at a time, in
/// order (see `WebhookStore.claim`).
package struct WebhookDispatcher: Service {
    let store: WebhookStore
    let events: PartyEvents
    let encoder: any WebhookBodyEncoder
    let signal: ChangeSignal
    let schemaReady: StartupGate
    let settings: WebhookDeliverySettings
    let addresses: WebhookAddressPolicy
    let logger: Logger
    /// Attempts under way on this instance (at most `settings.workers`), for `/metrics`.
    package let attemptsInFlight = InFlightCount()

    package init(
        database: Database, events: PartyEvents, encoder: any WebhookBodyEncoder, signal: ChangeSignal,
        schemaReady: StartupGate, settings: WebhookDeliverySettings, logger: Logger
    ) {
        self.schemaReady = schemaReady
        self.store = WebhookStore(database: database)
        self.events = events
        self.encoder = encoder
        self.signal = signal
        self.settings = settings
        self.addresses = WebhookAddressPolicy(allowPrivateNetworks: settings.allowPrivateNetworks)
        self.logger = logger
    }

    package func run() async throws {
        // Every connection to a receiver goes through the egress proxy, which connects to the
        // address it checked: no second resolution between the check and the connection.
        let proxy = try await WebhookEgressProxy.start(policy: addresses, logger: logger)
        let client = Self.client(through: proxy, timeout: settings.timeout, connectionsPerHost: settings.workers)
        await cancelWhenGracefulShutdown {
            await schemaReady.wait()
            let crew = WorkerCrew(signal: signal)
            await withDiscardingTaskGroup { group in
                for _ in 0..<settings.workers {
                    group.addTask { await work(client, crew: crew) }
                }
            }
        }
        try await client.shutdown()
        await proxy.close()
    }

    /// The HTTP client of deliveries: no redirects, no decompression, connections only through
    /// `proxy` (a tunnel per connection, TLS end to end with the receiver's name).
    /// `connect` bounds the connection to the proxy and its CONNECT answer. Every worker may hold a
    /// connection to one host (several organisations' endpoints often share a host): with fewer,
    /// attempts would queue inside the client behind each other.
    package static func client(
        through proxy: WebhookEgressProxy, timeout: Duration, connect: Duration = .seconds(5), connectionsPerHost: Int = 8
    ) -> HTTPClient {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .init(connect), read: .init(timeout)),
            proxy: .server(host: "127.0.0.1", port: proxy.port, authorization: .basic(username: proxy.username, password: proxy.password))
        )
        configuration.decompression = .disabled
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(1, connectionsPerHost)
        // A receiver that refuses the connection fails this attempt now; retries are ours, with backoff.
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.tracing.tracer = nil  // it would record the receiver's URL: see TraceHeaders
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// One worker: claim one due delivery, attempt it, repeat; when idle, sleep until a
    /// notification wakes this worker of the crew (one per notification) or another worker found
    /// a delivery.
    private func work(_ client: HTTPClient, crew: WorkerCrew) async {
        await crew.repeatWhileBusy(pollInterval: settings.pollInterval) {
            do {
                guard let delivery = try await store.claim(limit: 1, lease: settings.lease).first else { return false }
                attemptsInFlight.enter()
                await attempt(delivery, client: client)
                attemptsInFlight.leave()
                return true
            } catch {
                if !Task.isCancelled {
                    logger.warning("could not claim webhook deliveries", metadata: ["error.type": "\(String(reflecting: type(of: error)))"])
                }
                return false
            }
        }
    }

    /// One attempt of one delivery, recorded whatever happens; a trace span of its own
    /// (`webhook attempt`), whose context goes to the receiver as `traceparent` (`TraceHeaders`).
    package func attempt(_ delivery: ClaimedDelivery, client: HTTPClient) async {
        await withSpan("webhook attempt", ofKind: .client) { span in
            span.attributes["data4help.delivery.id"] = delivery.publicId.uuidString.lowercased()
            span.attributes["data4help.event.type"] = delivery.eventType
            span.attributes["data4help.attempt"] = delivery.attempt
            await attempt(delivery, client: client, span: span)
        }
    }

    private func attempt(_ delivery: ClaimedDelivery, client: HTTPClient, span: any Span) async {
        let started = ContinuousClock.now
        let at = Date()
        do {
            var event: PartyEvent?
            if let eventId = delivery.eventId {
                event = try await events.event(id: eventId)
                if event == nil {  // the grant ended or the data is gone: nothing may be sent
                    try await store.finish(delivery, attempt: nil, outcome: .cancelled)
                    return
                }
            }
            let body = try encoder.body(for: delivery, event: event)
            let result = await send(body, of: delivery, client: client)
            if let status = result.status { span.attributes["http.response.status_code"] = status }
            if let error = result.error { span.setStatus(.init(code: .error, message: error)) }
            let elapsed = ContinuousClock.now - started
            let record = DeliveryAttemptRecord(
                attempt: delivery.attempt, at: at, durationMs: Int(elapsed.wholeMilliseconds),
                statusCode: result.status, error: result.error
            )
            let delivered = result.status.map { (200..<300).contains($0) } ?? false
            let outcome: DeliveryOutcome =
                delivered
                ? .delivered
                : delivery.roundAttempt >= settings.maxAttempts
                    ? .failed
                    : .retry(at: Date().addingTimeInterval(backoff(after: delivery.roundAttempt)))
            let disclosure = result.possiblyReceived ? event.flatMap { PartyEvents.disclosure(of: $0, via: .webhook) } : nil
            try await store.finish(delivery, attempt: record, outcome: outcome, disclosure: disclosure)
            Counter(label: "webhook_attempts_total", dimensions: [("result", delivered ? "delivered" : "failed")]).increment()
            if delivered {
                Timer(label: "webhook_delivery_latency_seconds").recordNanoseconds(Int64(Date().timeIntervalSince(delivery.createdAt) * 1e9))
            }
        } catch {
            // The attempt could not even be recorded: leave the lease to run out and try again then.
            logger.warning(
                "webhook attempt not recorded",
                metadata: [
                    "delivery.id": "\(delivery.publicId)", "error.type": "\(String(reflecting: type(of: error)))",
                ])
        }
    }

    private struct SendResult {
        var status: Int?
        var error: String?
        /// The body may have reached the receiver (it answered, or went quiet after the request was sent).
        var possiblyReceived: Bool
    }

    private func send(_ body: [UInt8], of delivery: ClaimedDelivery, client: HTTPClient) async -> SendResult {
        guard let url = URL(string: delivery.url), let host = url.host(percentEncoded: false) else {
            return SendResult(status: nil, error: "invalid URL", possiblyReceived: false)
        }
        if let refusal = await addresses.refusal(for: host) {
            return SendResult(status: nil, error: refusal, possiblyReceived: false)
        }
        var request = HTTPClientRequest(url: delivery.url)
        request.method = .POST
        let timestamp = Int64(Date().timeIntervalSince1970)
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "Data4Help-Webhooks/1")
        request.headers.add(name: "Data4Help-Delivery", value: delivery.publicId.uuidString.lowercased())
        request.headers.add(name: "Data4Help-Event", value: delivery.eventType)
        request.headers.add(name: WebhookSignature.header, value: WebhookSignature.header(secret: delivery.secret, timestamp: timestamp, body: body))
        TraceHeaders.inject(into: &request.headers)
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await client.execute(request, timeout: .init(settings.timeout))
            // Read a little of the answer (some servers only finish once it is read), then drop it.
            _ = try? await response.body.collect(upTo: settings.responseLimit)
            return SendResult(status: Int(response.status.code), error: nil, possiblyReceived: true)
        } catch let error as HTTPClientError {
            let received = [HTTPClientError.readTimeout, .deadlineExceeded, .remoteConnectionClosed].contains(error)
            return SendResult(status: nil, error: Self.describe(error), possiblyReceived: received)
        } catch {
            return SendResult(status: nil, error: Self.describe(error), possiblyReceived: false)
        }
    }

    /// A short, secret-free reason for the log.
    private static func describe(_ error: any Error) -> String {
        switch error {
        case let error as HTTPClientError where error == .readTimeout || error == .deadlineExceeded: "timed out"
        case let error as HTTPClientError where error == .connectTimeout: "connect timed out"
        case let error as HTTPClientError where error == .remoteConnectionClosed: "connection closed by receiver"
        case let error as HTTPClientError where error == .invalidProxyResponse: "refused at connection: address not allowed or unreachable"
        default: String(String(describing: error).prefix(200))
        }
    }

    /// Seconds to wait after the round's n-th failed attempt, with ±20 % jitter so that a
    /// receiver coming back up is not hit by every retry at once.
    func backoff(after attempt: Int) -> TimeInterval {
        let base = settings.backoff[min(max(attempt - 1, 0), settings.backoff.count - 1)]
        return base.inSeconds * Double.random(in: 0.8...1.2)
    }
}
