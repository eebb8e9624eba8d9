import ArgumentParser
import Data4HelpCore
import DatabaseLink
import Foundation
import HTTPAPI
import HTTPTypes
import HealthSharing
import Hummingbird
import NIOCore
import NIOHTTP1
import Synchronization

/// `data4help bench webhooks`: the time from an individual's upload being acknowledged to the
/// webhook POST carrying it arriving at a local receiver, with many subscribed grants.
///
/// `grants` individuals each grant one of `parties` organisations a subscribed heart-rate grant;
/// every organisation's webhook points at one in-process receiver, which checks each signature.
/// Then `uploads` small uploads from random individuals, `clients` at a time. The same run also
/// times the uploads with no subscription at all, the baseline of what the outbox adds.
struct WebhookBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "webhooks", abstract: "Webhook delivery latency with many subscribed grants.")

    @Option(help: "Subscribed grants (one individual each).") var grants = 1_000
    @Option(help: "Organisations the grants are spread over (each with its own webhook endpoint).") var parties = 10
    @Option(help: "Uploads timed.") var uploads = 2_000
    @Option(help: "Samples per upload.") var samples = 10
    @Option(help: "Concurrent uploading clients.") var clients = 8

    func run() async throws {
        let receiver = BenchReceiver()
        let receiverReservation = try LoopbackPortReservation.forImmediateBind()
        let receiverPort = receiverReservation.port
        let receiverTask = receiver.start(port: receiverPort)
        defer { receiverTask.cancel(); withExtendedLifetime(receiverReservation) {} }
        try await BenchServer.run(configure: { $0.webhookAllowPrivateNetworks = true }) { server in
            print(
                "data4help bench webhooks — \(grants) subscribed grants over \(parties) organisations, \(uploads) uploads × \(samples) samples, \(clients) clients"
            )
            let started = ContinuousClock.now
            let people = try await BenchServer.concurrently(grants + Self.baselineIndividuals, clients) { try await server.individualSession($0) }
            let organisations = try await BenchServer.concurrently(parties, clients) { index -> String in
                let token = try await server.thirdPartySession(index)
                let (status, body) = try await server.send(
                    .PUT, "/api/thirdparties/webhook", token: token, json: #"{"url":"http://127.0.0.1:\#(receiverPort)/p/\#(index)"}"#)
                guard status == .created, let secret = body["secret"] as? String else {
                    throw ValidationError("webhook registration answered \(status)")
                }
                receiver.secrets.withLock { $0[index] = secret }
                return token
            }
            _ = try await BenchServer.concurrently(grants, clients) { person in
                let (_, filed) = try await server.send(
                    .POST, "/api/thirdparties/requests", token: organisations[person % parties],
                    json: """
                        {"fiscalCode":"\(BenchServer.fiscalCode(person))","types":["heartRate"],"purpose":"Bench","subscribe":true}
                        """)
                guard let id = filed["id"] as? String else { throw ValidationError("request for \(person) failed") }
                let (status, _) = try await server.send(.PUT, "/api/users/requests/\(id)", token: people[person], json: #"{"decision":"accept"}"#)
                guard status == .ok else { throw ValidationError("acceptance of \(id) answered \(status)") }
            }
            try await receiver.waitFor(grants)  // every request.granted has arrived: the outbox is empty
            print(String(format: "set-up (registrations with Argon2id, requests, acceptances): %.0f s", (ContinuousClock.now - started).inSeconds))

            // Baseline: individuals with no grant upload the same way.
            let baseline = try await timedUploads(server, tokens: { people[grants + $0 % Self.baselineIndividuals] }, offset: 0)
            let subscribed = try await timedUploads(server, tokens: { people[($0 * 7919) % grants] }, offset: uploads)
            try await receiver.waitFor(grants + uploads)
            let arrivals = receiver.arrivals.withLock { $0 }
            var afterAck: [Double] = []
            var afterSend: [Double] = []
            for (upload, timing) in subscribed.enumerated() {
                guard let arrived = arrivals[uploads + upload] else { throw ValidationError("upload \(upload) was never delivered") }
                afterAck.append((arrived - timing.acknowledged).inSeconds * 1000)
                afterSend.append((arrived - timing.sent).inSeconds * 1000)
            }
            let inOrder = afterAck  // upload by upload, as they were started
            afterAck.sort()
            afterSend.sort()
            func line(_ name: String, _ values: [Double]) -> String {
                String(
                    format: "%@ p50 %7.1f ms   p90 %7.1f ms   p99 %7.1f ms   max %7.1f ms",
                    name.padding(toLength: 46, withPad: " ", startingAt: 0), percentile(values, 0.5), percentile(values, 0.9),
                    percentile(values, 0.99), values.last ?? .nan)
            }
            print("")
            print(line("upload acknowledged, no subscription", baseline.map(\.ackMs).sorted()))
            print(line("upload acknowledged, \(grants) subscribed grants", subscribed.map(\.ackMs).sorted()))
            print(line("upload acknowledged → webhook received", afterAck))
            print(line("upload sent → webhook received", afterSend))
            BenchSummary.record(
                "webhooks", "upload acknowledged, no subscription, p99 (ms)", format: "%.1f", percentile(baseline.map(\.ackMs).sorted(), 0.99))
            BenchSummary.record(
                "webhooks", "upload acknowledged, \(grants) subscribed grants, p99 (ms)", format: "%.1f",
                percentile(subscribed.map(\.ackMs).sorted(), 0.99))
            BenchSummary.record(
                "webhooks", "upload acknowledged → webhook received, p50 / p99 (ms)", format: "%.1f / %.1f", percentile(afterAck, 0.5),
                percentile(afterAck, 0.99))
            // Whether the outbox kept up: a backlog shows as deliveries arriving slower than uploads were
            // acknowledged, and as a latency that grows from the first uploads to the last.
            if let firstSent = subscribed.map(\.sent).min(), let lastAck = subscribed.map(\.acknowledged).max(),
                let lastArrival = arrivals.filter({ $0.key >= uploads }).values.max()
            {
                let tenth = max(1, uploads / 10)
                let early = inOrder.prefix(tenth)
                let late = inOrder.suffix(tenth)
                print(
                    String(
                        format:
                            "uploads acknowledged %.0f/s, deliveries received %.0f/s; acknowledged → received, mean of the first tenth %.1f ms, of the last %.1f ms",
                        Double(uploads) / (lastAck - firstSent).inSeconds, Double(uploads) / (lastArrival - firstSent).inSeconds,
                        early.reduce(0, +) / Double(early.count), late.reduce(0, +) / Double(late.count)))
            }
            print(
                "deliveries received: \(receiver.count), bad signatures: \(receiver.badSignatures.withLock { $0 }), duplicates: \(receiver.duplicates.withLock { $0 })"
            )
        }
    }

    static let baselineIndividuals = 100

    struct UploadTiming: Sendable {
        let sent: ContinuousClock.Instant
        let acknowledged: ContinuousClock.Instant
        var ackMs: Double { (acknowledged - sent).inSeconds * 1000 }
    }

    /// `uploads` uploads, `clients` at a time; upload n's samples start at second (offset + n) × samples
    /// of today (the receiver tells uploads apart by that).
    private func timedUploads(_ server: BenchServer, tokens: @escaping @Sendable (Int) -> String, offset: Int) async throws -> [UploadTiming] {
        let samples = self.samples
        let midnight = Calendar(identifier: .gregorian).startOfDay(for: Date()).timeIntervalSince1970 - 86_400
        return try await BenchServer.concurrently(uploads, clients) { upload in
            let first = midnight + Double((offset + upload) * samples)
            let items = (0..<samples).map { second in
                #"{"type":"heartRate","value":\#(60 + second),"start":"\#(Date(timeIntervalSince1970: first + Double(second)).formatted(.iso8601))"}"#
            }
            let sent = ContinuousClock.now
            let (status, _) = try await server.send(
                .POST, "/api/users/data", token: tokens(upload), json: #"{"items":["# + items.joined(separator: ",") + "]}")
            let acknowledged = ContinuousClock.now
            guard status == .ok else { throw ValidationError("upload answered \(status)") }
            return UploadTiming(sent: sent, acknowledged: acknowledged)
        }
    }
}

/// The webhook receiver of the benchmark: verifies each signature, notes when each upload's
/// delivery arrived (by the upload number its first sample's time encodes), counts duplicates.
final class BenchReceiver: Sendable {
    let secrets = Mutex<[Int: String]>([:])
    let arrivals = Mutex<[Int: ContinuousClock.Instant]>([:])
    let badSignatures = Mutex(0)
    let duplicates = Mutex(0)
    private let deliveryIds = Mutex<Set<String>>([])
    private let midnight = Calendar(identifier: .gregorian).startOfDay(for: Date()).timeIntervalSince1970 - 86_400

    var count: Int { deliveryIds.withLock { $0.count } }

    func start(port: Int) -> Task<Void, any Error> {
        let router = Router()
        router.post("p/{party}") { request, context -> Response in
            let arrived = ContinuousClock.now
            let body = try await request.body.collect(upTo: 1 << 24)
            let bytes = Array(body.readableBytesView)
            let party = context.parameters.get("party", as: Int.self) ?? -1
            let secret = self.secrets.withLock { $0[party] } ?? ""
            let signature = request.headers[HTTPField.Name("Data4Help-Signature")!] ?? ""
            if !WebhookSignature.verify(header: signature, secret: secret, body: bytes) { self.badSignatures.withLock { $0 += 1 } }
            let id = request.headers[HTTPField.Name("Data4Help-Delivery")!] ?? ""
            guard self.deliveryIds.withLock({ $0.insert(id).inserted }) else {
                self.duplicates.withLock { $0 += 1 }
                return Response(status: .noContent)
            }
            if let json = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
                let items = (json["data"] as? [String: Any])?["items"] as? [[String: Any]],
                let start = (items.first?["start"] as? String).flatMap({ try? Date($0, strategy: .iso8601) })
            {
                let upload = Int((start.timeIntervalSince1970 - self.midnight).rounded(.down)) / max(1, items.count)
                self.arrivals.withLock { $0[upload] = arrived }
            }
            return Response(status: .noContent)
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)))
        return Task { try await app.runService(gracefulShutdownSignals: []) }
    }

    /// Waits until `count` distinct deliveries have arrived (at most 5 minutes).
    func waitFor(_ count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(300)
        while self.count < count {
            guard ContinuousClock.now < deadline else { throw ValidationError("only \(self.count) of \(count) deliveries arrived") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
