import Foundation
import Testing

@testable import DatabaseLink

/// The database's clock as a held runner's post sees it: estimated from reads' round trips, the
/// least doubtful estimate kept, so one read that waited long does not set it.
struct HeldRunnersClockTests {
    typealias ClockOffset = HeldRunners.ClockOffset
    let start = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func theOffsetIsTheMidpointsAndItsDoubtHalfTheRoundTrip() {
        // The database read its clock at 10.5 s by its own count while this instance sent at 0 and
        // had the answer at 1 s: the database runs 10 s ahead, give or take half a second.
        let clock = ClockOffset(
            databaseNow: start.addingTimeInterval(10.5), sentAt: start, answeredAt: start.addingTimeInterval(1))
        #expect(clock.offset == 10)
        #expect(clock.doubt == 0.5)
        #expect(abs(clock.doubt(at: start.addingTimeInterval(101)) - 0.6) < 1e-9, "a millisecond of doubt a second of age")
    }

    @Test func aSlowReadDoesNotReplaceAQuickOneUntilTheQuickOneHasAged() {
        let quick = ClockOffset(databaseNow: start.addingTimeInterval(0.001), sentAt: start, answeredAt: start.addingTimeInterval(0.002))
        let slowSoonAfter = ClockOffset(
            databaseNow: start.addingTimeInterval(10), sentAt: start.addingTimeInterval(2), answeredAt: start.addingTimeInterval(10))
        #expect(quick.better(slowSoonAfter).offset == quick.offset, "8 s of round trip lose to 2 ms")

        let quickLater = ClockOffset(
            databaseNow: start.addingTimeInterval(60.0015), sentAt: start.addingTimeInterval(60), answeredAt: start.addingTimeInterval(60.003))
        #expect(quick.better(quickLater).offset == quickLater.offset, "a minute old, 2 ms of round trip is doubted more than 3 ms now")

        let stepped = ClockOffset(
            databaseNow: start.addingTimeInterval(3_605), sentAt: start.addingTimeInterval(3_600), answeredAt: start.addingTimeInterval(3_600.5))
        #expect(quick.better(stepped).offset == stepped.offset, "an hour old, any reasonable read replaces it")
    }
}
