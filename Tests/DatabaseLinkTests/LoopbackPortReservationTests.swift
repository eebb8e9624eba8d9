import DatabaseLink
import Foundation
import Testing

/// A released port stays its reservation's until the reservation is dropped: on a busy machine
/// running two suites, another reservation took a released port before the server it was
/// released for could bind it ("Address already in use").
@Suite("Loopback port reservations")
struct LoopbackPortReservationTests {
    @Test func aReleasedPortIsNotHandedOutAgainUntilItsReservationIsDropped() throws {
        var first: LoopbackPortReservation? = try LoopbackPortReservation()
        first?.release()  // the socket is closed: only the lock keeps the port now
        let port = try #require(first.flatMap { UInt16(exactly: $0.port) })

        let second = try LoopbackPortReservation(trying: [port])
        #expect(second.port != Int(port), "a released, still-held port was handed out again")

        first = nil
        let third = try LoopbackPortReservation(trying: [port])
        #expect(third.port == Int(port), "a dropped reservation's port is free again")
    }

    @Test func aBoundPortIsSkipped() throws {
        let first = try LoopbackPortReservation()
        let port = try #require(UInt16(exactly: first.port))
        let second = try LoopbackPortReservation(trying: [port, port])
        #expect(second.port != first.port)
        withExtendedLifetime(first) {}
    }
}
