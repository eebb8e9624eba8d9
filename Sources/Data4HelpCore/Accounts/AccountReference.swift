/// Which account a credential belongs to: the internal id of an individual or of a third party.
package enum AccountReference: Sendable, Hashable {
    case individual(Int64)
    case thirdParty(Int64)
}
