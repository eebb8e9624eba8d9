import NIOCore
import NIOWebSocket
import RunEvents

/// Writes one spectator's messages from its connection's event loop.
///
/// Thousands of spectators take the same message after every batch; doing it where the socket
/// lives costs one hop per spectator and batch, where a task per spectator writing through the
/// WebSocket handler costs three (the task, the handler, the event loop). The frames go down the
/// same pipeline as the handler's own (pings, close), in order, since both are written on the
/// event loop. Each message is taken when the previous one has been written to the socket, so
/// the kernel's socket buffer is the only queue, and what waits meanwhile is each runner's latest
/// state in the hub. A field the hub deferred is taken by a timer on the same event loop.
///
/// The hub's messages are whole frames (`WebSocketFramedWire`), shared by every spectator: they
/// are written from the WebSocket frame encoder's place in the pipeline, so that they pass on
/// below it as they are. The handler's own frames go through the encoder, on the same event loop,
/// so the order holds.
final class LiveFrameWriter: Sendable {
    private let channel: any Channel
    /// Confined to the event loop: the subscription once started, whether a write is in flight,
    /// whether a timer will take the deferred field, and the encoder's context.
    private let state: NIOLoopBoundBox<State>

    private struct State {
        var subscription: LiveRunHub.Subscription?
        var writing = false
        var timer = false
        var encoder: ChannelHandlerContext?
    }

    init(channel: any Channel) {
        self.channel = channel
        state = .makeBoxSendingValue(State(), eventLoop: channel.eventLoop)
    }

    /// Called by the hub when there is something new to take.
    @Sendable func wake() {
        channel.eventLoop.execute { self.writeNext() }
    }

    func start(_ subscription: LiveRunHub.Subscription) {
        channel.eventLoop.execute {
            // The upgrade put the encoder in the pipeline; without it the frames' bytes could not be written.
            guard let encoder = try? self.channel.pipeline.syncOperations.context(handlerType: WebSocketFrameEncoder.self) else {
                self.channel.close(promise: nil)
                return
            }
            self.state.value.encoder = encoder
            self.state.value.subscription = subscription
            self.writeNext()
        }
    }

    private func writeNext() {
        guard !state.value.writing, let subscription = state.value.subscription, let encoder = state.value.encoder else { return }
        switch subscription.take() {
        case .message(let frame):
            state.value.writing = true
            encoder.writeAndFlush(NIOAny(frame)).whenComplete { result in
                self.state.value.writing = false
                if case .success = result { self.writeNext() }  // a failed write: the connection is closing
            }
        case .fieldIn(let wait):
            guard !state.value.timer else { return }
            state.value.timer = true
            let milliseconds = wait.components.seconds * 1_000 + wait.components.attoseconds / 1_000_000_000_000_000 + 1
            channel.eventLoop.scheduleTask(in: .milliseconds(milliseconds)) {
                self.state.value.timer = false
                self.writeNext()
            }
        case .nothing:
            return
        }
    }
}
