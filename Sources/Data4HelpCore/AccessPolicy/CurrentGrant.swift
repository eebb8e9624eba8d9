import Foundation

/// A grant's scope as it stands when an event is read: what its data may still deliver.
package struct CurrentGrant: Sendable, Equatable {
    package var types: [String]
    package var fromMs: Int64?
    package var toMs: Int64?
    package var until: Date?
    package var subscribed: Bool

    package init(types: [String], fromMs: Int64?, toMs: Int64?, until: Date?, subscribed: Bool) {
        self.types = types
        self.fromMs = fromMs
        self.toMs = toMs
        self.until = until
        self.subscribed = subscribed
    }

    /// Whether an item of `kind` at `timeMs` is within the grant (the window is half-open).
    package func covers(kind: String, timeMs: Int64) -> Bool {
        types.contains(kind) && fromMs.map { timeMs >= $0 } ?? true && toMs.map { timeMs < $0 } ?? true
    }
}
