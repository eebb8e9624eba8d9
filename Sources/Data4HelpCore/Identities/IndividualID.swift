/// An individual, as the server knows them once authenticated: the account's internal row id.
/// Components take this, never a bare `Int64` or a principal they would have to re-check, so a
/// call cannot mix up an individual with an organisation (the API only ever shows public ids).
package struct IndividualID: Sendable, Hashable, CustomStringConvertible {
    package let rowId: Int64

    package init(rowId: Int64) {
        self.rowId = rowId
    }

    /// The row id, for logs (never a name, an e-mail or a fiscal code).
    package var description: String { "individual:\(rowId)" }
}
