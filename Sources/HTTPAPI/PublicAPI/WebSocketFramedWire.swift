import NIOCore
import RunEvents

/// A live wire format whose messages are whole WebSocket text frames: the header and the
/// payload in one buffer, built once per message and shared by every spectator that takes it.
///
/// A server's frames are not masked, so a frame's bytes are the same on every connection. Written
/// as `WebSocketFrame`s, each message went through NIO's `WebSocketFrameEncoder` once per
/// spectator: a frame boxed into `NIOAny`, a header buffer allocated, and two buffers handed to
/// `writev`. `LiveFrameWriter` writes these bytes below the encoder instead, as they are. The
/// parts of a message (states, rank entries, leaders) are the inner format's, unframed.
struct WebSocketFramedWire: LiveWireFormat {
    let inner: any LiveWireFormat

    var stateCarriesRank: Bool { inner.stateCarriesRank }
    var stateNamesRunner: Bool { inner.stateNamesRunner }
    var sendsOrderChanges: Bool { inner.sendsOrderChanges }

    func state(_ state: RunnerState, index: Int, of event: RunEvent) -> ByteBuffer {
        inner.state(state, index: index, of: event)
    }

    func snapshot(_ board: LiveBoard, event: RunEvent, runners: [ByteBuffer]) -> ByteBuffer {
        Self.textFrame(inner.snapshot(board, event: event, runners: runners))
    }

    func rank(_ state: RunnerState, index: Int) -> ByteBuffer {
        inner.rank(state, index: index)
    }

    func leaders(_ indices: [Int]) -> ByteBuffer {
        inner.leaders(indices)
    }

    func update(runners: [ByteBuffer], ranks: [ByteBuffer], order: LiveOrderChange?, leaders: ByteBuffer?) -> ByteBuffer {
        Self.textFrame(inner.update(runners: runners, ranks: ranks, order: order, leaders: leaders))
    }

    /// `payload` as one final, unmasked text frame (RFC 6455 §5.2): FIN and opcode 1, then the
    /// length in 7 bits, or 126 and 16 bits, or 127 and 64 bits.
    static func textFrame(_ payload: ByteBuffer) -> ByteBuffer {
        let length = payload.readableBytes
        var frame = ByteBuffer()
        frame.reserveCapacity(length + 10)
        frame.writeInteger(0x81 as UInt8)
        if length < 126 {
            frame.writeInteger(UInt8(truncatingIfNeeded: length))
        } else if length <= 0xFFFF {
            frame.writeInteger(126 as UInt8)
            frame.writeInteger(UInt16(truncatingIfNeeded: length))
        } else {
            frame.writeInteger(127 as UInt8)
            frame.writeInteger(UInt64(truncatingIfNeeded: length))
        }
        frame.writeImmutableBuffer(payload)
        return frame
    }
}
