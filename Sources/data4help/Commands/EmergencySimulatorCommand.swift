import ArgumentParser
import Foundation
import HTTPAPI
import Logging
import ServiceLifecycle

/// `data4help ems-sim`: a local dispatch centre that accepts, prints and acknowledges
/// AutomatedSOS dispatches — point `SOS_DISPATCH_URL` at it for demos.
struct EmergencySimulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ems-sim",
        abstract: "Run a local emergency dispatch centre simulator.",
        discussion: """
            Set the server's SOS_DISPATCH_URL to http://HOST:PORT/dispatches and SOS_DISPATCH_SECRET to the same secret \
            (the simulator reads it from SOS_DISPATCH_SECRET too). With --server it reports back: acknowledged, then resolved.
            """
    )

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on.") var port = 9110
    @Option(help: "The shared dispatch secret (default: $SOS_DISPATCH_SECRET).") var secret: String?
    @Option(help: "The Data4Help server to report back to, e.g. http://127.0.0.1:8080.") var server: String?
    @Option(help: "Seconds until the simulator acknowledges a dispatch.") var acknowledgeAfter = 1.0
    @Option(help: "Seconds until it resolves it (after acknowledging).") var resolveAfter = 10.0

    func run() async throws {
        guard let secret = secret ?? ProcessInfo.processInfo.environment["SOS_DISPATCH_SECRET"], secret.utf8.count >= 16 else {
            throw ValidationError("give --secret or SOS_DISPATCH_SECRET (at least 16 characters), the same as the server's")
        }
        var logger = Logger(label: "ems-sim")
        logger.logLevel = .notice
        let reports = server.map {
            DispatchCentreSimulator.Reports(
                callbackBase: $0.hasSuffix("/") ? String($0.dropLast()) : $0,
                acknowledgeAfter: .milliseconds(Int(acknowledgeAfter * 1000)), resolveAfter: .milliseconds(Int(resolveAfter * 1000))
            )
        }
        let simulator = DispatchCentreSimulator(
            secret: secret, reports: reports,
            print: { line in
                FileHandle.standardOutput.write(Data((line + "\n").utf8))
            })
        FileHandle.standardOutput.write(Data("ems-sim listening on http://\(host):\(port)/dispatches\n".utf8))
        try await simulator.run(host: host, port: port, logger: logger)
    }
}
