/// Why an account operation was refused.
package enum AccountError: Error, Equatable {
    /// Registration clashed with an existing account. Deliberately does not say which field
    /// or which account: that would tell a stranger whether a fiscal code is registered.
    case alreadyRegistered
    /// A confirmation token that is unknown, already used or expired.
    case confirmationUnknown
    /// A profile change to an email address another account uses.
    case emailInUse
    /// A password change whose `currentPassword` was wrong.
    case wrongCurrentPassword
    /// An erasure confirmed with the wrong password.
    case wrongPassword
    /// The account no longer exists (erased while a token was still in flight).
    case notFound
}
