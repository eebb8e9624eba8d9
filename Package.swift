// swift-tools-version:6.2
import PackageDescription

/// Settings every Data4Help module is built with: the same upcoming features Hummingbird uses,
/// so `package` access and explicit imports mean what they say.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "data4help",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "data4help", targets: ["data4help"]),
        // libFuzzer driver over every decoder of outside bytes (make fuzz); without FUZZING, a replayer.
        .executable(name: "data4help-fuzz", targets: ["DecoderFuzzer"]),
        // The Swift client kit for apps: the API client generated from openapi/ and a sync engine.
        .library(name: "Data4HelpKit", targets: ["Data4HelpKit"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/weichsel/ZIPFoundation.git", from: "0.9.20"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.0"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.0"),
        // OTLP over HTTP only: the gRPC exporter would build grpc-swift for nothing.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        // Starting other programs (PostgreSQL's tools; in tests, the programs we check against).
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.5.0"),
    ],
    targets: [
        // Argon2id from the system's libargon2 (Debian: libargon2-dev).
        .systemLibrary(
            name: "CArgon2",
            pkgConfig: "libargon2",
            providers: [.apt(["libargon2-dev"])]
        ),
        // zlib from the system (Debian: zlib1g-dev), for request bodies sent gzip- or deflate-coded
        // (ZIPFoundation has a module CZlib of its own, not a product: this one has the init shims).
        .systemLibrary(
            name: "CZlibStream",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // A whole body deflated by that zlib: what Data4HelpKit sends gzip-coded (and the bench's load
        // generator). The server's inflating, with its limits, is HTTPAPI's `ContentCoding`.
        .target(name: "ZlibCoding", dependencies: ["CZlibStream"], swiftSettings: swiftSettings),
        // An XML reader for documents from outside (no entities, no libxml2), whole or fed in pieces.
        .target(name: "UntrustedXML"),
        // Files devices and tools write, read for run courses and imports alike: GPX, TCX and FIT.
        .target(name: "DeviceFiles", dependencies: ["Data4HelpCore", "UntrustedXML"], swiftSettings: swiftSettings),
        .executableTarget(name: "DecoderFuzzer", dependencies: ["HTTPAPI"]),
        // The migrations, the contract and the page templates compiled into the executable, so that
        // it runs from anywhere (the table is generated at build time by the EmbedFiles plugin).
        .executableTarget(name: "EmbedFilesTool", path: "Sources/EmbedFilesTool"),
        .plugin(name: "EmbedFiles", capability: .buildTool(), dependencies: ["EmbedFilesTool"]),
        .target(name: "EmbeddedFiles", swiftSettings: swiftSettings, plugins: ["EmbedFiles"]),
        // The words every tier shares and nothing else: closed sets of states (a request's status, an
        // incident's), so that a status is decoded once, at DatabaseLink's edge, and compared as a type.
        .target(name: "Data4HelpCore", swiftSettings: swiftSettings),
        // The only module that talks to PostgreSQL: connection pool, migrations, embedded cluster, every query.
        .target(
            name: "DatabaseLink",
            dependencies: [
                "Data4HelpCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: swiftSettings
        ),
        // Access Manager: accounts, passwords, login tokens, API keys, settings.
        .target(
            name: "AccessManager",
            dependencies: [
                "CArgon2",
                "Data4HelpCore",
                "DatabaseLink",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // HealthSharing: the data manager (samples, locations), access policies, data elaboration.
        .target(
            name: "HealthSharing",
            dependencies: [
                "AccessManager",
                "Data4HelpCore",
                "DatabaseLink",
                "DeviceFiles",
                "UntrustedXML",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // SOS Manager (AutomatedSOS): enrolment, detection at ingest, incidents, emergency dispatch.
        .target(
            name: "SOSManager",
            dependencies: [
                "AccessManager",
                "Data4HelpCore",
                "DatabaseLink",
                "HealthSharing",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // RunEvent Manager (Track4Run): courses (GeoJSON, GPX), projection of runners onto them.
        .target(
            name: "RunEvents",
            dependencies: [
                "AccessManager", "Data4HelpCore", "DatabaseLink", "DeviceFiles", "UntrustedXML", .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The HTTP layer: the two API surfaces, errors as problem+json, operability endpoints, wiring.
        .target(
            name: "HTTPAPI",
            dependencies: [
                "AccessManager",
                "CZlibStream",
                "ZlibCoding",
                "Data4HelpCore",
                "HealthSharing",
                "RunEvents",
                "SOSManager",
                "DatabaseLink",
                "DeviceFiles",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
            ],
            // Page templates are compiled into EmbeddedFiles (or read from PAGES_DIR), not sources.
            exclude: ["Pages/Templates"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "data4help",
            dependencies: [
                "AccessManager",
                "EmbeddedFiles",
                "Data4HelpCore",
                "RunEvents",
                "HTTPAPI",
                "DatabaseLink",
                "HealthSharing",
                "ZlibCoding",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "OTel", package: "swift-otel"),
            ],
            swiftSettings: swiftSettings
        ),
        // Data4HelpKit: the client generated from the contract (Generated/, by `make kit`) and the sync
        // engine an app embeds. It shares no server code (only zlib's deflate): an app links this and nothing else.
        .target(
            name: "Data4HelpKit",
            dependencies: [
                "ZlibCoding",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client", condition: .when(platforms: [.linux])),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(platforms: [.linux])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(platforms: [.linux])),
                .product(
                    name: "OpenAPIURLSession", package: "swift-openapi-urlsession",
                    condition: .when(platforms: [.macOS, .iOS, .watchOS, .tvOS, .visionOS])),
            ],
            swiftSettings: swiftSettings
        ),
        // Starts one throwaway PostgreSQL cluster per test process and hands each test its own database.
        .target(
            name: "DatabaseTestSupport",
            dependencies: [
                "DatabaseLink",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/DatabaseTestSupport",
            swiftSettings: swiftSettings
        ),
        // Programs others wrote, run by tests: filters on bytes (GNU gzip, CPython's zlib) and
        // programs kept running while a test talks to them (our server, Chromium, nginx, a relay).
        .target(
            name: "ExternalPrograms",
            dependencies: [
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Tests/ExternalPrograms",
            swiftSettings: swiftSettings
        ),
        // Reproducible randomness for property and statistical tests.
        .target(name: "SeededRandom", path: "Tests/SeededRandom", swiftSettings: swiftSettings),
        .testTarget(
            name: "DatabaseLinkTests",
            dependencies: [
                "Data4HelpCore", "DatabaseLink", "DatabaseTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AccessManagerTests",
            dependencies: [
                "AccessManager", "DatabaseLink", "DatabaseTestSupport", "ExternalPrograms",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            // The SMTP relay the transport test talks to: CPython's, started as a process.
            exclude: ["Support/smtp-relay.py"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HealthSharingTests",
            dependencies: [
                "HealthSharing", "AccessManager", "Data4HelpCore", "DatabaseLink", "DatabaseTestSupport", "SeededRandom",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RunEventsTests",
            dependencies: [
                "RunEvents", "DatabaseLink", "DeviceFiles", "UntrustedXML", "SeededRandom", .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "DeviceFilesTests", dependencies: ["DeviceFiles"], swiftSettings: swiftSettings),
        .testTarget(
            name: "Data4HelpKitTests",
            dependencies: [
                "Data4HelpKit", "ExternalPrograms", .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SOSManagerTests",
            dependencies: ["SOSManager", "HealthSharing", "DatabaseLink", "SeededRandom"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HTTPAPITests",
            dependencies: [
                "HTTPAPI",
                "Data4HelpKit",
                "ExternalPrograms",
                "ZlibCoding",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                "HealthSharing",
                "DatabaseLink",
                "DatabaseTestSupport",
                "DeviceFiles",
                "SeededRandom",
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
