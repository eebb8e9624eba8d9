public import Foundation
public import HTTPTypes
public import OpenAPIRuntime

#if canImport(OpenAPIAsyncHTTPClient)
import AsyncHTTPClient
import NIOCore
import OpenAPIAsyncHTTPClient
#elseif canImport(OpenAPIURLSession)
import OpenAPIURLSession
#endif

extension Client {
    /// A client of the Data4Help server at `serverURL` (for example `https://data4help.example`),
    /// sending `credential` — a login token or, for a third party, an API key — as a bearer
    /// token when it returns one. Times go out with milliseconds, as the server keeps them.
    ///
    /// JSON bodies of a kilobyte or more go gzip-coded (`RequestCompression`: the sync engine's
    /// uploads of 1 Hz heart rate in about a fifth of the bytes) unless `compressingRequests` is false.
    ///
    /// The transport is AsyncHTTPClient's on Linux and URLSession's on Apple platforms; pass
    /// `transport` to choose another (a test's, a proxy's). `middlewares` (an app's logging,
    /// metrics) see each request after the kit's own, as it goes out: credential added, coded.
    public static func data4Help(
        serverURL: URL,
        credential: @escaping @Sendable () async -> String? = { nil },
        transport: (any ClientTransport)? = nil,
        compressingRequests: Bool = true,
        middlewares: [any ClientMiddleware] = []
    ) -> Client {
        let own: [any ClientMiddleware] = [BearerCredential(credential: credential)] + (compressingRequests ? [RequestCompression()] : [])
        return Client(
            serverURL: serverURL,
            configuration: Configuration(dateTranscoder: MillisecondDateTranscoder(), jsonEncodingOptions: []),
            transport: transport ?? defaultTransport(),
            middlewares: own + middlewares
        )
    }

    private static func defaultTransport() -> any ClientTransport {
        #if canImport(OpenAPIAsyncHTTPClient)
        AsyncHTTPClientTransport(configuration: .init(client: kitHTTPClient, timeout: .seconds(120)))
        #else
        URLSessionTransport()
        #endif
    }
}

#if canImport(OpenAPIAsyncHTTPClient)
/// The kit's HTTP client on Linux: like `HTTPClient.shared` (never shut down), except that a
/// connection that cannot be made fails the request at once instead of being tried again until the
/// request's deadline — the sync engine retries with its own backoff and must hear of the outage
/// (seen: with the pool's retrying, an upload to a stopped server hung for the whole minute).
let kitHTTPClient: HTTPClient = {
    var configuration = HTTPClient.Configuration()
    configuration.connectionPool.retryConnectionEstablishment = false
    configuration.timeout.connect = .seconds(10)
    return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
}()
#endif

/// Adds `Authorization: Bearer …` to every request when the provider has a credential; an
/// operation without security (registration, sign-in) simply goes without when it has none.
struct BearerCredential: ClientMiddleware {
    let credential: @Sendable () async -> String?

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        if request.headerFields[.authorization] == nil, let value = await credential() {
            request.headerFields[.authorization] = "Bearer \(value)"
        }
        return try await next(request, body, baseURL)
    }
}

/// RFC 3339 times with milliseconds going out (`2026-11-26T08:30:00.250Z`), and coming in with or
/// without a fraction, with any offset (one style parses all of them): the runtime's default
/// drops the milliseconds the server keeps.
struct MillisecondDateTranscoder: DateTranscoder {
    private static let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    func encode(_ date: Date) throws -> String { Self.style.format(date) }

    func decode(_ text: String) throws -> Date {
        do {
            return try Self.style.parse(text)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not an RFC 3339 time: \(text)"))
        }
    }
}
