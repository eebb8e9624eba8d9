import Data4HelpCore
import Foundation
import RunEvents
import Testing

/// The announcement of a runner's new state between instances: one line of `|`-separated fields
/// that must read back as exactly the state written, and nothing else.
@Suite struct LiveAnnouncementTests {
    /// Display names a runner may choose: the separator, quotes, accents, emoji, an empty one.
    static let names = ["R1", "", "a|b||c|", #"say "hi""#, "è é ü", "😀 run", "line\nbreak", "|"]

    @Test func everyStateReadsBackExactly() throws {
        var generator = SystemRandomNumberGenerator()
        func maybe<T>(_ value: T) -> T? { Bool.random(using: &generator) ? value : nil }
        for _ in 0..<500 {
            // Stored times carry microseconds; positions and distances any double the projection gives.
            let time = { Date(timeIntervalSince1970: Double(Int64.random(in: 0...4_102_444_800_000_000, using: &generator)) / 1e6) }
            let record = RunnerStateRecord(
                runnerId: UUID(), displayName: Self.names.randomElement(using: &generator)!, lastFixAt: maybe(time()),
                latitude: maybe(Double.random(in: -90...90, using: &generator)), longitude: maybe(Double.random(in: -180...180, using: &generator)),
                distanceMeters: [0, 1 / 3, 42_195.000_000_1, Double.random(in: 0...1e6, using: &generator)].randomElement(using: &generator)!,
                firstFixAt: maybe(time()), offCourse: Bool.random(using: &generator), finishedAt: maybe(time()), droppedFixes: 0
            )
            let runId = UUID()
            let announcement = LiveAnnouncement(runId: runId, state: record)
            let read = try #require(LiveAnnouncement(payload: announcement.payload))
            #expect(read == announcement && read.state == record, "\(announcement.payload)")
            #expect(announcement.payload.utf8.count < 8_000)  // PostgreSQL's limit for a NOTIFY payload
        }
    }

    @Test func whatIsNotAnAnnouncementIsRefused() {
        let good = LiveAnnouncement(
            runId: UUID(),
            state: RunnerStateRecord(
                runnerId: UUID(), displayName: "R1", lastFixAt: Date(timeIntervalSince1970: 1_800_000_030), latitude: 45.4755,
                longitude: 9.1725, distanceMeters: 100, firstFixAt: Date(timeIntervalSince1970: 1_800_000_001), offCourse: false, finishedAt: nil,
                droppedFixes: 0)
        ).payload
        #expect(LiveAnnouncement(payload: good) != nil)
        var fields = good.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        func replacing(_ index: Int, with value: String) -> String {
            var changed = fields
            changed[index] = value
            return changed.joined(separator: "|")
        }
        let refused = [
            "", "r1", #"{"runId":"x"}"#, fields.dropLast().joined(separator: "|"), replacing(0, with: "r2"), replacing(1, with: "not-a-uuid"),
            replacing(3, with: "soon"), replacing(3, with: "1e13"), replacing(5, with: "nan"), replacing(6, with: "inf"), replacing(7, with: ""),
            replacing(8, with: "true"), replacing(9, with: "-"),
        ]
        for payload in refused { #expect(LiveAnnouncement(payload: payload) == nil, "\(payload)") }
        fields[10] = "a|b"  // the display name is the rest of the line
        #expect(LiveAnnouncement(payload: fields.joined(separator: "|"))?.state.displayName == "a|b")
    }
}
