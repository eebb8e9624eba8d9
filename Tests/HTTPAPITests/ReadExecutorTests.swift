import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOPosix
import Testing

@testable import HTTPAPI

/// Where a request's handler runs: reads on their connection's event loop, everything else on
/// Swift's cooperative pool.
@Suite struct ReadExecutorTests {
    /// Answers on which kind of thread the handler was after awaiting work that completes on
    /// another event loop (as a database reply does).
    static func whereAmI(_ loops: MultiThreadedEventLoopGroup) async throws -> String {
        let elsewhere = loops.next()
        try await elsewhere.scheduleTask(in: .milliseconds(1)) {}.futureResult.get()
        guard let current = MultiThreadedEventLoopGroup.currentEventLoop else { return "pool" }
        return current === elsewhere ? "elsewhere" : "loop"
    }

    @Test func readsRunOnTheirConnectionsEventLoopAndWritesOnThePool() async throws {
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let router = Router(context: AppRequestContext.self)
        router.add(middleware: RequestTimeoutMiddleware(deadlines: RequestDeadlines(limit: .seconds(30))))
        router.get("/where") { _, _ in try await Self.whereAmI(loops) }
        router.post("/where") { _, _ in try await Self.whereAmI(loops) }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            for _ in 0..<20 {
                try await client.execute(uri: "/where", method: .get) { response in
                    #expect(String(buffer: response.body) == "loop")
                }
                try await client.execute(uri: "/where", method: .post) { response in
                    #expect(String(buffer: response.body) == "pool")
                }
            }
        }
        try await loops.shutdownGracefully()
    }

    @Test func aTaskPreferringTheExecutorComesBackToItsLoop() async throws {
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let home = loops.next()
        let away = loops.next()
        let task = Task(executorPreference: EventLoopTaskExecutor(home)) {
            var seen: [Bool] = [home.inEventLoop]
            for _ in 0..<10 {
                try await away.scheduleTask(in: .microseconds(100)) {}.futureResult.get()
                seen.append(home.inEventLoop)
                await Task.yield()
                seen.append(home.inEventLoop)
            }
            return seen
        }
        #expect(try await task.value.allSatisfy { $0 })
        try await loops.shutdownGracefully()
    }
}
