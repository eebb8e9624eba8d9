import Data4HelpCore
import Synchronization

/// A credential, or every credential of an account, that this process just ended.
package enum EndedCredential: Sendable, Equatable {
    case accessToken(id: Int64)
    case apiKey(id: Int64)
    case account(AccountReference)
}

/// In-process news of credentials this process ended, told after the change committed, so that
/// this instance's credential caches forget them before the revoking request is answered. Other
/// instances hear it from the database (`AccessTokenStore.credentialsChannel`) a moment later;
/// this one must not depend on that moment (a client's next request can be faster).
package enum CredentialRevocations {
    package typealias Subscriber = @Sendable (EndedCredential) -> Void

    private static let subscribers = Mutex<[ObjectIdentifier: Subscriber]>([:])

    /// `owner` hears every ended credential until it unsubscribes (at the latest, in its deinit).
    package static func subscribe(_ owner: AnyObject, _ subscriber: @escaping Subscriber) {
        subscribers.withLock { $0[ObjectIdentifier(owner)] = subscriber }
    }

    package static func unsubscribe(_ owner: AnyObject) {
        _ = subscribers.withLock { $0.removeValue(forKey: ObjectIdentifier(owner)) }
    }

    static func announce(_ ended: EndedCredential) {
        for subscriber in subscribers.withLock({ Array($0.values) }) { subscriber(ended) }
    }
}
