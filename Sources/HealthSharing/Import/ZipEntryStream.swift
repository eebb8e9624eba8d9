import Dispatch
import Foundation
import Synchronization
import ZIPFoundation

/// One file inside a ZIP archive on disk, inflated piece by piece as an async stream.
///
/// ZIPFoundation extracts synchronously, handing each inflated piece to a closure; the import
/// worker is async and commits between pieces. The extraction therefore runs on a thread of its
/// own and waits (a semaphore) whenever `ahead` pieces are waiting to be read, so an archive of
/// gigabytes is never inflated faster than it is read, nor held in memory.
enum ZipEntryStream {
    /// Why an archive cannot be read, in words for its owner.
    struct Unreadable: Error {
        let reason: String
    }

    /// The entry the import reads: the largest `.xml` file that is not the clinical-document
    /// export (`export_cda.xml`). The Health app names it `apple_health_export/export.xml`; some
    /// languages translate the names.
    static func exportEntry(in archive: Archive) -> Entry? {
        archive.filter { $0.type == .file && $0.path.lowercased().hasSuffix(".xml") && !$0.path.lowercased().contains("cda") }
            .max { $0.uncompressedSize < $1.uncompressedSize }
    }

    /// The export inside an archive: its file name, and its bytes as a stream; the workout
    /// routes beside it.
    struct Export {
        fileprivate let archive: Archive
        fileprivate let entry: Entry
        /// `workout-routes/*.gpx` (one per outdoor workout), in path order.
        let routes: [Route]

        /// `export.xml`.
        var name: String { entry.path.split(separator: "/").last.map(String.init) ?? entry.path }

        func pieces(pieceBytes: Int) -> Pieces { ZipEntryStream.pieces(of: entry, in: archive, pieceBytes: pieceBytes) }

        /// A route file's bytes, inflated whole (a route is small: about 100 bytes a point).
        func bytes(of route: Route, limit: Int64) throws(Unreadable) -> [UInt8] {
            guard route.entry.uncompressedSize <= UInt64(clamping: limit) else {
                throw Unreadable(reason: "\(route.entry.path) in the ZIP archive is too large")
            }
            var bytes: [UInt8] = []
            do {
                _ = try archive.extract(route.entry, skipCRC32: false) { bytes += $0 }
            } catch {
                throw Unreadable(reason: "\(route.entry.path) in the ZIP archive cannot be inflated (the archive is damaged or cut off)")
            }
            return bytes
        }
    }

    /// A workout route file in the archive.
    struct Route {
        fileprivate let entry: Entry
        /// `route_2026-11-18_6.31pm.gpx`.
        var name: String { entry.path.split(separator: "/").last.map(String.init) ?? entry.path }
    }

    /// Opens the archive at `url` and finds the export in it.
    static func export(at url: URL) throws(Unreadable) -> Export {
        let archive: Archive
        do {
            archive = try Archive(url: url, accessMode: .read)
        } catch {
            throw Unreadable(reason: "the file is not a ZIP archive, or it is cut off (its directory at the end is missing)")
        }
        guard let entry = exportEntry(in: archive) else {
            throw Unreadable(reason: "the ZIP archive holds no export.xml (is it the Health app's export.zip?)")
        }
        let routes = archive.filter { $0.type == .file && $0.path.contains("workout-routes/") && $0.path.lowercased().hasSuffix(".gpx") }
            .sorted { $0.path < $1.path }.map(Route.init)
        return Export(archive: archive, entry: entry, routes: routes)
    }

    /// The entry's bytes, inflated, in pieces of about `pieceBytes`.
    private static func pieces(of entry: Entry, in archive: Archive, pieceBytes: Int = 256 * 1024, ahead: Int = 4) -> Pieces {
        let (stream, continuation) = AsyncThrowingStream<Data, any Error>.makeStream()
        let credits = DispatchSemaphore(value: ahead)
        let stopped = Atomic(false)
        continuation.onTermination = { _ in
            stopped.store(true, ordering: .releasing)
            credits.signal()
        }
        // Used by the extraction's thread only, from here on.
        nonisolated(unsafe) let archive = archive, entry = entry
        let thread = Thread {
            do {
                _ = try archive.extract(entry, bufferSize: pieceBytes, skipCRC32: false) { data in
                    credits.wait()
                    if stopped.load(ordering: .acquiring) { throw CancellationError() }
                    continuation.yield(data)
                }
                continuation.finish()
            } catch Archive.ArchiveError.invalidCRC32 {
                continuation.finish(throwing: Unreadable(reason: "\(entry.path) in the ZIP archive is damaged (its checksum does not match)"))
            } catch is CancellationError {
                continuation.finish()
            } catch {
                continuation.finish(
                    throwing: Unreadable(reason: "\(entry.path) in the ZIP archive cannot be inflated (the archive is damaged or cut off)"))
            }
        }
        thread.start()
        return Pieces(stream: stream, credits: credits)
    }

    /// The inflated pieces; reading one lets the extraction go on to the next.
    struct Pieces: AsyncSequence {
        let stream: AsyncThrowingStream<Data, any Error>
        let credits: DispatchSemaphore

        struct AsyncIterator: AsyncIteratorProtocol {
            var inner: AsyncThrowingStream<Data, any Error>.AsyncIterator
            let credits: DispatchSemaphore

            mutating func next() async throws -> Data? {
                let piece = try await inner.next()
                credits.signal()
                return piece
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(inner: stream.makeAsyncIterator(), credits: credits) }
    }
}
