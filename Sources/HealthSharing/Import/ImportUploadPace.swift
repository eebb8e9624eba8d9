import Synchronization

/// How fast this instance stores the bytes of import uploads while others' live uploads arrive:
/// an export arriving over a fast link writes its chunks (and their WAL, which the others'
/// commits flush with their own) at up to 100 MB/s, several times faster than its records can be
/// read, so the others would wait behind writes that gain the import nothing. While
/// `othersUploading` holds, every import upload of the instance shares `bytesPerSecond` (a
/// virtual schedule, as in GCRA: each chunk is due when the one before it has been paid for);
/// alone, an upload goes as fast as it arrives. The wait holds the request's body stream, so
/// TCP slows the sender down; nothing is buffered meanwhile.
package final class ImportUploadPace: Sendable {
    /// Bytes a second while others upload; nil: never paced.
    let bytesPerSecond: Int?
    let othersUploading: @Sendable () -> Bool
    /// When the next chunk may be stored, by the schedule.
    private let due = Mutex(ContinuousClock.now)

    package init(bytesPerSecond: Int?, othersUploading: @escaping @Sendable () -> Bool) {
        self.bytesPerSecond = bytesPerSecond.flatMap { $0 > 0 ? $0 : nil }
        self.othersUploading = othersUploading
    }

    /// Waits until a chunk of `bytes` may be stored. Cancellation ends the wait early: the chunk
    /// is then stored at once (what arrived is kept, as the upload promises).
    package func admit(_ bytes: Int) async {
        guard let wait = reserve(bytes, at: .now) else { return }
        try? await Task.sleep(for: wait)
    }

    /// Books `bytes` on the schedule at `now`: answers how long to wait first, or nil for not at
    /// all (others are not uploading: the schedule restarts from now).
    func reserve(_ bytes: Int, at now: ContinuousClock.Instant) -> Duration? {
        guard let bytesPerSecond else { return nil }
        let others = othersUploading()
        let cost = Duration.seconds(Double(max(bytes, 0)) / Double(bytesPerSecond))
        return due.withLock { due in
            guard others else {
                due = now
                return nil
            }
            let start = max(due, now)
            due = start + cost
            return start > now ? start - now : nil
        }
    }
}
