import AccessManager
import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import RunEvents

/// `data4help run-demo`: organises a run event on a running server, enrols simulated runners
/// and streams their positions at running pace, so the spectators' page moves within a minute.
/// Talks to the server over its public API only, as phones would.
struct RunDemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run-demo",
        abstract: "Simulate runners on a course in Parco Sempione against a running server (make run) and print the spectators' URL."
    )

    @Option(help: "The server.") var server = "http://127.0.0.1:8080"
    @Option(help: "The server's mail pickup directory (make run writes registration links there).") var mailDirectory = ".data/mail"
    @Option(help: "Simulated runners.") var runners = 8
    @Option(help: "Seconds until the start.") var startIn = 15

    /// A loop of about 2.2 km in Parco Sempione, Milan, from the Arco della Pace.
    static let course: [[Double]] = [
        [9.1725, 45.4755], [9.1760, 45.4735], [9.1790, 45.4712], [9.1812, 45.4700], [9.1830, 45.4712],
        [9.1800, 45.4738], [9.1765, 45.4760], [9.1725, 45.4755],
    ]
    static let names = ["Giulia", "Marco", "Sofia", "Luca", "Chiara", "Matteo", "Anna", "Davide", "Elena", "Paolo", "Sara", "Andrea"]

    func validate() throws {
        guard (1...200).contains(runners), (5...600).contains(startIn) else { throw ValidationError("--runners 1…200, --start-in 5…600") }
    }

    func run() async throws {
        let client = HTTPClient.shared
        let tag = String(UUID().uuidString.prefix(6)).lowercased()
        let organiser = try await session(client, "organiser-\(tag)", index: 0)
        let startsAt = Date().addingTimeInterval(Double(startIn)).addingTimeInterval(-Date().timeIntervalSince1970.truncatingRemainder(dividingBy: 1))
        let event = try await send(
            client, .POST, "/api/users/runs", token: organiser,
            json: [
                "name": "Parco Sempione demo run", "description": "Simulated runners, \(runners) of them.",
                "startsAt": startsAt.wireTime, "endsAt": startsAt.addingTimeInterval(3_600).wireTime, "enrolmentDeadline": startsAt.wireTime,
                "maxParticipants": runners, "path": ["type": "LineString", "coordinates": Self.course] as [String: Any],
            ])
        guard let id = event["id"] as? String else { throw ValidationError("the server did not create the event: \(event)") }
        var tokens: [String] = []
        for index in 0..<runners {
            let token = try await session(client, "runner\(index)-\(tag)", index: index + 1)
            _ = try await send(
                client, .POST, "/api/users/runs/\(id)/enrolment", token: token,
                json: ["displayName": Self.names[index % Self.names.count] + (index >= Self.names.count ? " \(index / Self.names.count + 1)" : "")])
            tokens.append(token)
        }
        Self.say("Spectators: \(server)/runs/\(id)   (start in \(Int(startsAt.timeIntervalSinceNow.rounded())) s; Ctrl-C stops the runners)")
        let path = try GeoPath(coordinates: Self.course)
        let speeds = (0..<runners).map { _ in Double.random(in: 2.6...4.6) }  // 3:37 to 6:25 per km
        try await Task.sleep(until: .now + .seconds(max(0, startsAt.timeIntervalSinceNow) + 0.5))
        while true {
            let now = Date(), elapsed = now.timeIntervalSince(startsAt)
            let finished = try await withThrowingTaskGroup(of: Bool.self) { group in
                for (index, token) in tokens.enumerated() {
                    group.addTask {
                        let along = min(path.lengthMeters, elapsed * speeds[index])
                        let point = path.point(at: along)
                        // A few metres of GPS noise.
                        let fix: [String: Any] = [
                            "latitude": point.latitude + Double.random(in: -0.00003...0.00003),
                            "longitude": point.longitude + Double.random(in: -0.00004...0.00004),
                            "accuracy": 5, "time": now.wireTime,
                        ]
                        _ = try? await send(client, .POST, "/api/users/runs/\(id)/positions", token: token, json: ["positions": [fix]])
                        return along >= path.lengthMeters
                    }
                }
                return try await group.reduce(true) { $0 && $1 }
            }
            if finished { break }
            try await Task.sleep(for: .seconds(1))
        }
        Self.say("Every runner has finished: \(server)/api/runs/\(id)/leaderboard")
    }

    private func session(_ client: HTTPClient, _ name: String, index: Int) async throws -> String {
        let email = "\(name)@demo.invalid", password = "demo password \(name)"
        let mailbox = PickupMailbox(directory: URL(fileURLWithPath: mailDirectory))
        let earlier = mailbox.messages(to: email).count  // a runner of an earlier demo gets a notice, not a link
        _ = try await send(
            client, .POST, "/api/users/registration",
            json: [
                "email": email, "password": password, "fiscalCode": "DEMO\(Int.random(in: 10_000_000...99_999_999))", "fullName": "Demo \(name)",
                "birthDate": "1990-01-01", "sex": "other", "homeArea": "IT-MI",
            ])
        guard let messages = try await mailbox.waitForMessages(to: email, moreThan: earlier) else {
            throw ValidationError("no message for \(email) in \(mailDirectory): is the server writing its mail there (MAIL_PICKUP_DIR)?")
        }
        if let token = messages.dropFirst(earlier).first?.confirmationToken {
            _ = try await send(client, .POST, "/api/users/registration/confirmation", json: ["token": token])
        }
        let login = try await send(client, .POST, "/api/users/login", json: ["email": email, "password": password])
        guard let token = login["token"] as? String else { throw ValidationError("could not log in \(email): \(login)") }
        return token
    }

    private func send(
        _ client: HTTPClient, _ method: HTTPMethod, _ path: String, token: String? = nil, json: [String: Any]
    ) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: server + path)
        request.method = method
        request.headers.add(name: "Content-Type", value: "application/json")
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: json)))
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]) ?? [:]
    }

    /// A line on standard output, at once (also when it is a file or a pipe).
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

}
