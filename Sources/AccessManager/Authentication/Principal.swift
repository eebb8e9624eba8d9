import Data4HelpCore
import DatabaseLink

/// Who is asking, as established from a bearer credential.
package struct Principal: Sendable, Equatable {
    /// How the caller proved who they are.
    package enum Credential: Sendable, Hashable {
        /// A login token, by its internal id (so logout can revoke exactly it).
        case accessToken(id: Int64)
        /// A third party's API key, by its internal id.
        case apiKey(id: Int64)
        /// Someone with no account, by address: only a rate limit's key (share-link pages).
        case visitor(address: String)
    }

    package let account: AccountReference
    package let credential: Credential

    package init(account: AccountReference, credential: Credential) {
        self.account = account
        self.credential = credential
    }

    /// The individual asking, when the account is one.
    package var individual: IndividualID? {
        guard case .individual(let id) = account else { return nil }
        return IndividualID(rowId: id)
    }

    /// The organisation asking, when the account is one.
    package var thirdParty: ThirdPartyID? {
        guard case .thirdParty(let id) = account else { return nil }
        return ThirdPartyID(rowId: id)
    }
}

/// The two API surfaces; a credential of one is refused on the other.
package enum Surface: String, Sendable {
    case individual
    case thirdParty

    package func owns(_ account: AccountReference) -> Bool {
        switch (self, account) {
        case (.individual, .individual), (.thirdParty, .thirdParty): true
        default: false
        }
    }
}
