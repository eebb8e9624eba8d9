/// An organisation (a third party, the tenant of `/api/thirdparties`) once authenticated: the
/// account's internal row id. See `IndividualID`.
package struct ThirdPartyID: Sendable, Hashable, CustomStringConvertible {
    package let rowId: Int64

    package init(rowId: Int64) {
        self.rowId = rowId
    }

    /// The row id, for logs.
    package var description: String { "thirdParty:\(rowId)" }
}
