import PostgresNIO

/// Secrets shared by every instance of a deployment (`server_secrets`): made by whichever
/// instance asks first, read by all.
package struct ServerSecretStore: Sendable {
    let database: Database

    package init(database: Database) {
        self.database = database
    }

    /// The secret called `name`: the stored one, or `candidate` stored now if there is none.
    package func secret(named name: String, candidate: [UInt8]) async throws -> [UInt8] {
        try await database.query(
            """
            INSERT INTO server_secrets (name, secret) VALUES (\(name), \(ByteBuffer(bytes: candidate))) ON CONFLICT (name) DO NOTHING
            """)
        // The row exists now (this statement's or another instance's); nothing deletes it meanwhile.
        let rows = try await database.query("SELECT secret FROM server_secrets WHERE name = \(name)")
        return try rows.first.map { Array(buffer: try $0.decode(ByteBuffer.self)) } ?? candidate
    }
}
