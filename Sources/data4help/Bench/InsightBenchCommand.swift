import ArgumentParser
import Data4HelpCore
import DatabaseLink
import Foundation
import HTTPAPI
import HealthSharing
import NIOHTTP1
import PostgresNIO

/// `data4help bench insights`: how long a workout's analysis and a year of resting heart rates
/// take — the computation alone, and end to end through the API on a throwaway server (the first
/// read computes and keeps the analysis; later reads find it kept).
///
/// The workout: 104 minutes at one reading a second (6,240 readings) — the Hactive system's
/// longest, which it analysed in 4.0 s — warming up, then ten intervals of rising and falling
/// heart rate. The year: 365 nights with a reading every 5 minutes from midnight to six (a watch
/// asleep), and the same computation on readings every second.
struct InsightBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "insights", abstract: "Workout analysis and resting heart rate timings.")

    @Option(help: "Runs of each measurement.") var runs = 20

    /// 104 minutes at 1 Hz: ten minutes of warm-up, then ten intervals (3 min rising hard, 6 min easing).
    static func workout(startMs: Int64) -> [HeartRatePoint] {
        (0..<6_240).map { second in
            let bpm: Double
            if second < 600 {
                bpm = 90 + Double(second) / 600 * 40
            } else {
                let phase = (second - 600) % 540
                bpm = phase < 180 ? 130 + Double(phase) / 180 * 45 : 175 - Double(phase - 180) / 360 * 45
            }
            return HeartRatePoint(timeMs: startMs + Int64(second) * 1_000, bpm: bpm.rounded())
        }
    }

    func run() async throws {
        print("data4help bench insights — \(runs) runs each")
        // The computation alone.
        let start = Date(timeIntervalSince1970: 1_790_000_000)
        let points = Self.workout(startMs: start.epochMilliseconds)
        let workout = Workout(
            sequence: 1, id: UUID(), activity: "running", start: start, end: start.addingTimeInterval(6_240), distanceMetres: 17_000,
            energyKilocalories: nil, averageHeartRate: nil, maximumHeartRate: nil, source: nil, importId: nil)
        var profiles = 0
        let analysis = try Self.timed(runs) {
            profiles =
                WorkoutAnalysis.of(workout, heartRate: points, route: [], maximum: MaximumHeartRate(bpm: 190, source: .measured)).profiles.count
        }
        Self.report("analysis of a 104-min workout at 1 Hz, computation (\(profiles) profiles)", analysis)
        for (label, everyMs) in [("every 5 min", Int64(300_000)), ("every second", Int64(1_000))] {
            let nights = (0..<365).map { day -> [HeartRatePoint] in
                let midnight = Int64(day) * 86_400_000
                return stride(from: Int64(0), to: 6 * 3_600_000, by: Int(everyMs)).map { offset in
                    HeartRatePoint(timeMs: midnight + offset, bpm: 52 + Double((offset / everyMs) % 11) - Double(day % 5))
                }
            }
            let count = nights.reduce(0) { $0 + $1.count }
            let year = try Self.timed(max(3, runs / 4)) {
                for night in nights { _ = RestingHeartRate.lowestSustainedMean(night) }
            }
            Self.report("a year of resting heart rates, readings \(label) (\(count) readings), computation", year)
        }

        try await BenchServer.run { server in
            let token = try await server.individualSession(0)
            // The workout's readings and the workout itself (written as an import would).
            let now = Date()
            let workoutStart = Date(timeIntervalSince1970: (now.timeIntervalSince1970 / 60).rounded(.down) * 60 - 86_400)
            let readings = Self.workout(startMs: workoutStart.epochMilliseconds)
            try await Self.upload(readings, server: server, token: token)
            let database = Database(configuration: server.databaseURL.clientConfiguration(maximumConnections: 1), logger: server.logger)
            let workoutId = try await database.whileRunning {
                try await database.query(
                    """
                    INSERT INTO workouts (individual_id, client_id, activity, started_at, ended_at, distance_metres)
                    SELECT id, 'bench', 'running', \(workoutStart), \(workoutStart.addingTimeInterval(6_240)), 17000
                    FROM individuals WHERE fiscal_code = \(BenchServer.fiscalCode(0))
                    RETURNING public_id
                    """)[0].decode(UUID.self)
            }
            let path = "/api/users/workouts/\(workoutId.uuidString.lowercased())/analysis"
            let first = ContinuousClock.now
            let (status, body) = try await server.send(.GET, path, token: token)
            guard status == .ok else { throw ValidationError("analysis answered \(status): \(body)") }
            Self.report("GET …/analysis, first (reads 6,240 readings, computes, keeps)", [(ContinuousClock.now - first).inSeconds * 1000])
            let kept = try await Self.timedAsync(runs) { _ = try await server.send(.GET, path, token: token) }
            Self.report("GET …/analysis, kept (fingerprint of the readings only)", kept)

            // A year of nights, a reading every 5 minutes from midnight to six (UTC: the bench's
            // individual's time zone).
            let today = Date(timeIntervalSince1970: (now.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400)
            var nights: [HeartRatePoint] = []
            for day in 1...365 {
                let midnight = today.addingTimeInterval(-Double(day) * 86_400).epochMilliseconds
                for step in 0..<72 { nights.append(HeartRatePoint(timeMs: midnight + Int64(step) * 300_000, bpm: 50 + Double((step + day) % 9))) }
            }
            try await Self.upload(nights, server: server, token: token)
            let from = WireFormat.timestamp(today.addingTimeInterval(-365 * 86_400)), to = WireFormat.timestamp(today)
            let insights = "/api/users/insights?from=\(from)&to=\(to)"
            let firstYear = ContinuousClock.now
            let (yearStatus, yearBody) = try await server.send(.GET, insights, token: token)
            guard yearStatus == .ok else { throw ValidationError("insights answered \(yearStatus): \(yearBody)") }
            Self.report(
                "GET /api/users/insights, a year, first (reads 26,280 night readings, computes 365 nights, keeps)",
                [
                    (ContinuousClock.now - firstYear).inSeconds * 1000
                ])
            let year = try await Self.timedAsync(runs) {
                let (status, body) = try await server.send(.GET, insights, token: token)
                guard status == .ok else { throw ValidationError("insights answered \(status): \(body)") }
            }
            Self.report("GET /api/users/insights, a year, kept (versions of the nights' inputs only)", year)
            // A late reading in one night: that night is computed again, the others are kept.
            var late: [Double] = []
            for run in 0..<max(3, runs / 4) {
                let night = today.addingTimeInterval(-Double(10 + run) * 86_400).epochMilliseconds + 2 * 3_600_000 + 150_000
                try await Self.upload([HeartRatePoint(timeMs: night, bpm: 47)], server: server, token: token)
                let started = ContinuousClock.now
                let (status, body) = try await server.send(.GET, insights, token: token)
                guard status == .ok else { throw ValidationError("insights answered \(status): \(body)") }
                late.append((ContinuousClock.now - started).inSeconds * 1000)
            }
            Self.report("GET /api/users/insights, a year, after a late reading in one night (one night computed again)", late)
        }
    }

    static func upload(_ points: [HeartRatePoint], server: BenchServer, token: String) async throws {
        for chunk in stride(from: 0, to: points.count, by: 10_000) {
            let items = points[chunk..<min(chunk + 10_000, points.count)].map {
                #"{"type":"heartRate","value":\#($0.bpm),"start":"\#(WireFormat.timestamp(milliseconds: $0.timeMs))"}"#
            }
            let (status, body) = try await server.send(.POST, "/api/users/data", token: token, json: #"{"items":[\#(items.joined(separator: ","))]}"#)
            guard status == .ok else { throw ValidationError("upload answered \(status): \(body)") }
        }
    }

    static func timed(_ runs: Int, _ body: () throws -> Void) rethrows -> [Double] {
        try (0..<runs).map { _ in
            let started = ContinuousClock.now
            try body()
            return (ContinuousClock.now - started).inSeconds * 1000
        }
    }

    static func timedAsync(_ runs: Int, _ body: () async throws -> Void) async throws -> [Double] {
        var times: [Double] = []
        for _ in 0..<runs {
            let started = ContinuousClock.now
            try await body()
            times.append((ContinuousClock.now - started).inSeconds * 1000)
        }
        return times
    }

    static func report(_ name: String, _ times: [Double]) {
        let sorted = times.sorted()
        let p50 = sorted[sorted.count / 2], p95 = sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.95))]
        print(String(format: "%@: p50 %.2f ms, p95 %.2f ms", name, p50, p95))
        BenchSummary.record("insights", name, format: "p50 %.2f ms, p95 %.2f ms", p50, p95)
    }
}
