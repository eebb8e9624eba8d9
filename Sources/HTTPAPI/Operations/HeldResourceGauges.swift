import Data4HelpCore
import DatabaseLink
import Foundation
import HealthSharing
import Metrics
import RunEvents

/// What this instance holds, as gauges on `/metrics`, so that growth can be told from a leak
/// without a profiler: a count that returns to its baseline when the traffic stops is a working
/// set; memory that climbs while every count stays flat is the allocator or a leak elsewhere.
///
/// Recorded at every scrape of `/metrics`, so each value is exact at the time it is read:
/// - `process_resident_memory_bytes`: resident set size (`/proc/self/statm`);
/// - `live_events_watched`, `live_spectators`, `live_messages_due`: the live hub's events, its
///   spectators and those with a message waiting to be taken (at most one each by design);
/// - `websocket_connections_open`, `sse_streams_open`: long-lived connections being served;
/// - `change_signal_waiters`: tasks asleep on the outbox signal (dispatcher workers, streams);
/// - `rate_limit_buckets`: per-credential buckets held (swept every 10,000 decisions);
/// - `webhook_attempts_in_flight`: deliveries being attempted (at most `WEBHOOK_WORKERS`).
///
/// Prepared statements are not counted here: PostgresNIO keeps them per connection, keyed by
/// statement type, and this code has two (Anomaly Detection's `DetectionContextStatement` and
/// `ReadingsAroundStatement`), so a connection holds at most two.
package struct HeldResourceGauges: Sendable {
    /// Connections and streams under way, counted where they are served.
    final class Counts: Sendable {
        let webSockets = InFlightCount()
        let eventStreams = InFlightCount()
    }

    let gauges: [(gauge: Gauge, read: @Sendable () -> Int)]

    init(counts: Counts, components: Components, rateLimiter: RateLimiter, webhookAttempts: InFlightCount?) {
        let sources: [(label: String, read: @Sendable () -> Int)] = [
            ("process_resident_memory_bytes", { Self.residentBytes() }),
            ("live_events_watched", { components.liveHubs.reduce(0) { $0 + $1.watchedEventCount } }),
            ("live_spectators", { components.liveHubs.reduce(0) { $0 + $1.spectatorCount } }),
            ("live_messages_due", { components.liveHubs.reduce(0) { $0 + $1.messagesDue } }),
            ("websocket_connections_open", { counts.webSockets.value }),
            ("sse_streams_open", { counts.eventStreams.value }),
            ("change_signal_waiters", { components.changes.waiterCount + components.sosChanges.waiterCount }),
            ("rate_limit_buckets", { rateLimiter.bucketCount }),
            ("webhook_attempts_in_flight", { webhookAttempts?.value ?? 0 }),
        ]
        gauges = sources.map { (Gauge(label: $0.label), $0.read) }
    }

    func record() {
        for (gauge, read) in gauges { gauge.record(read()) }
    }

    /// Resident pages × page size, from `/proc/self/statm` (0 where there is none).
    package static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        let (bytes, overflow) = pages.multipliedReportingOverflow(by: Int(sysconf(Int32(_SC_PAGESIZE))))
        return overflow ? Int.max : bytes
    }
}
