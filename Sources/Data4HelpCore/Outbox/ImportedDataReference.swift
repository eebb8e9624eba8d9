import Foundation

/// What a `data.imported` event announces: one kind of data an import added, over a span of
/// time (within the grant's window), and how many items when all of them are in the window.
package struct ImportedDataReference: Sendable, Equatable {
    package var kind: String
    package var span: DataSpan
    package var count: Int64?

    package init(kind: String, span: DataSpan, count: Int64?) {
        self.kind = kind
        self.span = span
        self.count = count
    }
}
