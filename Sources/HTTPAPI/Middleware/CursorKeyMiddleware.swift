import Crypto
import DatabaseLink
import Hummingbird
import Synchronization

/// The application's cursor key: read (or made) in PostgreSQL before the server starts, so every
/// instance behind a balancer accepts the cursors of the others.
final class CursorKey: Sendable {
    private let key = Mutex<SymmetricKey?>(nil)

    /// Reads the deployment's key, making it if this is the first instance.
    func load(from database: Database) async throws {
        let candidate = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        let secret = try await ServerSecretStore(database: database).secret(named: "cursor-hmac", candidate: candidate)
        key.withLock { $0 = SymmetricKey(data: secret) }
    }

    var current: SymmetricKey? { key.withLock { $0 } }
}

/// Serves each request with the application's cursor key in `CursorCodec.key`.
struct CursorKeyMiddleware<Context: RequestContext>: RouterMiddleware {
    let key: CursorKey

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await CursorCodec.$key.withValue(key.current) { try await next(request, context) }
    }
}
