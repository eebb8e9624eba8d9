/// The organisation a request is served for, as PostgreSQL sees it: while `thirdPartyId` is
/// bound (the authentication middleware binds it for the third-party surface), every lease of a
/// `Database` runs in a transaction that first switches to the role `data4help_tenant` and sets
/// `data4help.third_party_id` (both `SET LOCAL`, gone at commit). Row-level security then shows
/// that role only the organisation's rows of the tenant tables (migration 0018), whatever the
/// query asks for.
package enum TenantScope {
    @TaskLocal package static var thirdPartyId: Int64?

    /// The role the scoped transactions run as.
    static let role = "data4help_tenant"
}
