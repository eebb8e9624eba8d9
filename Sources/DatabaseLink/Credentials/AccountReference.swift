import Data4HelpCore

/// How the storage layer reads an `AccountReference`.
extension AccountReference {
    /// The `access_tokens` column that holds this kind of owner (a constant, safe to splice into SQL).
    var ownerColumn: String {
        switch self {
        case .individual: "individual_id"
        case .thirdParty: "third_party_id"
        }
    }

    /// The internal id, whichever kind of account it is.
    var accountId: Int64 {
        switch self {
        case .individual(let id), .thirdParty(let id): id
        }
    }

    var individualId: Int64? {
        if case .individual(let id) = self { return id }
        return nil
    }

    var thirdPartyId: Int64? {
        if case .thirdParty(let id) = self { return id }
        return nil
    }
}
