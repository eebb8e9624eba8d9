import Data4HelpCore
import Foundation
import NIOCore
import RunEvents

/// Version 2 of the live view (the default): JSON text frames whose runner data are arrays of
/// integers, about 40 bytes per runner update where version 1 (`LiveJSON`) spent ~390.
///
/// Text rather than binary: the page decodes it with the browser's own `JSON.parse` (no decoder
/// of ours to get wrong in JavaScript), a person can read it in the browser's tools, and after
/// this change what a message costs is mostly per message (a frame, a write), not per byte. No
/// compression (`permessage-deflate` would compress every shared buffer again per connection).
///
/// - The snapshot: `{"type":"snapshot","v":2,"run":{…},"epoch":ms,"runners":[[id,name],…],
///   "states":[state…],"order":[index…]}` — a runner's **index** is its place in `runners`;
///   `order` is every index, leader first; `epoch` is the event's start (ms since 1970).
/// - An update: `{"type":"update","runners":[state…],"ranks":[index,rank,…],"moves":[index,rank,…],
///   "leaders":[index…]}` — the runners whose state changed; in a message that brings the whole
///   field (every message, or a follower's field message), `moves`: how the order changed since
///   the previous such message, as the fewest runners moved (`LiveBoard.moves`) with their new
///   ranks, leader first (remove them all from the order, then insert each at its rank), left
///   out when nothing moved; or `order`, the whole order, when the server no longer holds the
///   one the spectator has; `ranks` (flat pairs) in a follower's other messages: the followed
///   runners' new ranks; and the top ten, leader first, only when they changed.
/// - A state: `[index, latitude × 1e5, longitude × 1e5, metres along the course, tenths of a
///   second since epoch, pace in s/km (0: not yet known), flags]`, flags 1 off course,
///   2 finished. The page computes the estimated finish from the pace and the course's length.
struct LiveCompact: LiveWireFormat {
    var stateCarriesRank: Bool { false }
    var stateNamesRunner: Bool { false }

    func state(_ state: RunnerState, index: Int, of event: RunEvent) -> ByteBuffer {
        guard let latitude = state.latitude, let longitude = state.longitude, let time = state.time else { return ByteBuffer() }
        let flags = (state.offCourse ? 1 : 0) | (state.finished ? 2 : 0)
        let numbers = [
            index, Self.whole(latitude * 1e5), Self.whole(longitude * 1e5), Self.whole(state.distanceMeters),
            Self.whole(time.timeIntervalSince(event.startsAt) * 10), Self.whole(state.paceSecondsPerKm ?? 0), flags,
        ]
        return ByteBuffer(string: Self.list(numbers))
    }

    func snapshot(_ board: LiveBoard, event: RunEvent, runners: [ByteBuffer]) -> ByteBuffer {
        var message = ByteBuffer(string: #"{"type":"snapshot","v":2,"run":"#)
        var run = LiveJSON.encode(LiveRunBody(event))
        message.writeBuffer(&run)
        message.writeString(#","epoch":\#(Self.whole(event.startsAt.timeIntervalSince1970 * 1_000)),"runners":"#)
        var entries = LiveJSON.encode(board.states.map { [$0.runnerId.wireString, $0.displayName] })
        message.writeBuffer(&entries)
        message.writeString(#","states":"#)
        LiveJSON.writeArray(runners.filter { $0.readableBytes > 0 }, to: &message)
        message.writeString(#","order":\#(Self.list(board.order))}"#)
        return message
    }

    func rank(_ state: RunnerState, index: Int) -> ByteBuffer {
        ByteBuffer(string: "\(index),\(state.rank ?? 0)")
    }

    func leaders(_ indices: [Int]) -> ByteBuffer {
        ByteBuffer(string: Self.list(indices))
    }

    var sendsOrderChanges: Bool { true }

    func update(runners: [ByteBuffer], ranks: [ByteBuffer], order: LiveOrderChange?, leaders: ByteBuffer?) -> ByteBuffer {
        var message = ByteBuffer(string: #"{"type":"update","runners":"#)
        LiveJSON.writeArray(runners, to: &message)
        message.writeString(#","ranks":"#)
        LiveJSON.writeArray(ranks, to: &message)
        switch order {
        case .moves(let moves):
            message.writeString(#","moves":["#)
            for (number, move) in moves.enumerated() {
                message.writeString(number == 0 ? "\(move.index),\(move.rank)" : ",\(move.index),\(move.rank)")
            }
            message.writeString("]")
        case .whole(let order):
            message.writeString(#","order":\#(Self.list(order))"#)
        case nil:
            break
        }
        if let leaders {
            message.writeString(#","leaders":"#)
            message.writeImmutableBuffer(leaders)
        }
        message.writeString("}")
        return message
    }

    /// Integers as a JSON array: a state, the leaders, an order.
    private static func list(_ numbers: [Int]) -> String {
        "[" + numbers.map(String.init).joined(separator: ",") + "]"
    }

    /// A number the server computed from validated values (coordinates, metres, seconds), to the
    /// nearest whole; 0 for what cannot be one (never a trap).
    private static func whole(_ value: Double) -> Int {
        Int(exactly: value.rounded()) ?? 0
    }
}
