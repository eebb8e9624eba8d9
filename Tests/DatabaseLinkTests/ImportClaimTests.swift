import Data4HelpCore
import DatabaseLink
import DatabaseTestSupport
import Foundation
import PostgresNIO
import Testing

/// A worker claims an `export.xml` that is still uploading to read it as it arrives. Each chunk
/// is appended with the import's row locked, so during a fast upload the row is locked nearly
/// all the time: a claim that skipped locked rows found nothing, and the upload's one wake-up
/// was lost until it ended.
@Suite("Claiming an upload to follow while its chunks are being appended")
struct ImportClaimTests {
    @Test func aClaimWaitsForTheChunkBeingAppendedInsteadOfSkippingTheUpload() async throws {
        let url = try await TestPostgres.shared.migratedDatabase()
        let database = Database(configuration: url.clientConfiguration(maximumConnections: 4), logger: TestPostgres.logger)
        try await database.whileRunning {
            let individual = try await IndividualStore(database: database).insert(
                NewIndividual(
                    email: "claim@example.org", passwordHash: "x", fiscalCode: "CLAIM0001", fullName: "C", birthDate: "1980-01-01",
                    sex: "female", homeArea: "IT-MI"))
            let store = ImportStore(database: database)
            let upload = try await store.create(individualId: individual.id, format: .appleHealthXML)
            let bytes = [UInt8](repeating: 0x20, count: 4_096)
            _ = try await store.append(upload.publicId, individualId: individual.id, at: 0, bytes: bytes, limit: 1 << 20, followAhead: 1_024)

            // A chunk's append in progress: the row locked until its commit, a moment later.
            let (locked, lock) = AsyncStream<Void>.makeStream()
            /// Holds the import's row locked for 300 ms in a transaction of its own, as an append does.
            func appendingAChunk() -> Task<Void, any Error> {
                Task {
                    try await database.withTransaction { connection in
                        try await connection.query("SELECT 1 FROM imports WHERE id = \(upload.id) FOR UPDATE", logger: TestPostgres.logger)
                        lock.yield()
                        try await Task.sleep(for: .milliseconds(300))
                        try await connection.query(
                            "UPDATE imports SET bytes_received = bytes_received WHERE id = \(upload.id)", logger: TestPostgres.logger)
                    }
                }
            }
            let appending = appendingAChunk()
            var waits = locked.makeAsyncIterator()
            await waits.next()
            let claimed = try await store.claim(leaseFor: .seconds(60), followAhead: 1_024)
            try await appending.value
            #expect(claimed?.id == upload.id && claimed?.uploading == true && claimed?.bytesReceived == 4_096)

            // Followed now: a second worker, also waiting for a chunk's commit, claims nothing.
            let again = appendingAChunk()
            await waits.next()
            #expect(try await store.claim(leaseFor: .seconds(60), followAhead: 1_024) == nil)
            try await again.value
        }
    }
}
