/// Why a caller was not let in.
package enum AuthenticationError: Error, Equatable {
    /// No `Authorization` header, or one in a scheme we do not accept.
    case missingCredentials
    /// A login request with neither a JSON body nor HTTP Basic credentials.
    case missingLoginCredentials
    /// Email and password did not match an account (the same answer for an unknown email).
    case invalidLogin
    /// The bearer credential is unknown, expired or revoked.
    case invalidToken
    /// A valid credential of the other API surface.
    case wrongSurface
    /// Logout names the token in use; a request made with an API key has none to end.
    case notALoginToken
    /// An API key on a route that manages the account (keys, webhooks, sessions): keys are for
    /// the data API only, so a leaked key cannot make itself a successor or redirect deliveries.
    case loginSessionRequired
    /// Too many failed sign-ins for this account or from this address; retry after the seconds.
    case throttled(retryAfterSeconds: Int)
}
