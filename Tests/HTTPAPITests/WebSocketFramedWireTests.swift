import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

@testable import HTTPAPI

@Suite("Live messages as whole WebSocket frames, read back by NIO's own frame decoder")
struct WebSocketFramedWireTests {
    /// The three length forms (7 bits, 16 bits, 64 bits) and their edges.
    @Test(arguments: [0, 1, 125, 126, 127, 65_535, 65_536, 200_000])
    func aFrameOfAnyLengthIsReadBackWhole(length: Int) throws {
        let payload = ByteBuffer(bytes: (0..<length).map { UInt8(truncatingIfNeeded: 0x20 + $0 % 90) })
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: 1 << 20)))
        defer { _ = try? channel.finish() }
        try channel.writeInbound(WebSocketFramedWire.textFrame(payload))
        let frame = try #require(try channel.readInbound(as: WebSocketFrame.self))
        #expect(frame.fin && frame.opcode == .text && frame.maskKey == nil)
        #expect(frame.data == payload)
        #expect(try channel.readInbound(as: WebSocketFrame.self) == nil)  // nothing left over
    }
}
