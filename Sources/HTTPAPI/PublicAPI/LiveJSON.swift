import Data4HelpCore
import Foundation
import NIOCore
import RunEvents

/// Version 1 of the live view (`?v=1`, kept for one release): JSON text frames,
/// `{ "type": "snapshot", "run": {…}, "runners": [state…] }` first, then `{ "type": "update",
/// "runners": [state…], "ranks": [{ "runnerId", "rank" }…] }` (`ranks`: runners whose rank alone
/// changed). States are encoded once by the hub; the envelopes are put around the shared bytes.
struct LiveJSON: LiveWireFormat {
    var stateCarriesRank: Bool { true }
    var stateNamesRunner: Bool { true }

    func state(_ state: RunnerState, index: Int, of event: RunEvent) -> ByteBuffer {
        Self.encode(RunnerStateBody(state))
    }

    func snapshot(_ board: LiveBoard, event: RunEvent, runners: [ByteBuffer]) -> ByteBuffer {
        var message = ByteBuffer(string: #"{"type":"snapshot","run":"#)
        var run = Self.encode(LiveRunBody(event))
        message.writeBuffer(&run)
        message.writeString(#","runners":"#)
        Self.writeArray(runners, to: &message)
        message.writeString("}")
        return message
    }

    func rank(_ state: RunnerState, index: Int) -> ByteBuffer {
        Self.encode(RankBody(runnerId: state.runnerId.wireString, rank: state.rank))
    }

    func leaders(_ indices: [Int]) -> ByteBuffer { ByteBuffer() }

    var sendsOrderChanges: Bool { false }

    func update(runners: [ByteBuffer], ranks: [ByteBuffer], order: LiveOrderChange?, leaders: ByteBuffer?) -> ByteBuffer {
        var message = ByteBuffer(string: #"{"type":"update","runners":"#)
        Self.writeArray(runners, to: &message)
        message.writeString(#","ranks":"#)
        Self.writeArray(ranks, to: &message)
        message.writeString("}")
        return message
    }

    /// `{ "runnerId", "rank" }`: a runner whose rank alone changed.
    private struct RankBody: Encodable {
        let runnerId: String
        let rank: Int?
    }

    /// `[a,b,…]` of already encoded elements.
    static func writeArray(_ elements: [ByteBuffer], to message: inout ByteBuffer) {
        message.reserveCapacity(minimumWritableBytes: elements.reduce(2) { $0 + $1.readableBytes + 1 })
        message.writeString("[")
        for (index, element) in elements.enumerated() {
            if index > 0 { message.writeString(",") }
            message.writeImmutableBuffer(element)
        }
        message.writeString("]")
    }

    static func encode(_ value: some Encodable) -> ByteBuffer {
        // These bodies hold strings, numbers and booleans only: encoding them cannot fail.
        ByteBuffer(bytes: (try? WireFormat.encoder().encode(value)) ?? Data("null".utf8))
    }
}

/// What a spectator's page needs to know of the event.
struct LiveRunBody: Encodable {
    let id: String
    let name: String
    let status: String
    let startsAt: String
    let endsAt: String
    let lengthMeters: Double
    let path: RunEventBody.Path

    init(_ event: RunEvent) {
        id = event.id.wireString
        name = event.name
        status = event.phase.rawValue
        startsAt = WireFormat.timestamp(event.startsAt)
        endsAt = WireFormat.timestamp(event.endsAt)
        lengthMeters = (event.path.lengthMeters * 10).rounded() / 10
        path = RunEventBody.Path(coordinates: event.path.coordinates)
    }
}
