/// How long a credential's cache entry lives and how often its last use is written: each
/// credential's own share of the period (`CredentialCache` and `Authenticator` use the same).
package enum CredentialSpread {
    /// `period` for the credential with this digest: between half of it and all of it, the same
    /// for a credential every time, spread evenly over credentials (the digest's first two bytes:
    /// a SHA-256 is uniform).
    ///
    /// A period the same for everyone makes credentials resolved together expire together: at a
    /// mass start 5,000 runners' phones, whose tokens were resolved in the same seconds (or at
    /// their enrolment a minute before, in `bench live`), all came back to the database in the
    /// same seconds a period later, each post with a lookup and a written last use. The city race
    /// then had its posts at p50 100–150 ms for three to four seconds at a time, where the rest
    /// of the race ran at 10–20 (`bench live --timeline`; the lookups and writes of last use were
    /// in that window's profile and not in the others').
    package static func period(_ period: Duration, of digest: [UInt8]) -> Duration {
        let fraction = Double(Int(digest.first ?? 0) << 8 | Int(digest.dropFirst().first ?? 0)) / 65_536
        return period * (0.5 + 0.5 * fraction)
    }
}
