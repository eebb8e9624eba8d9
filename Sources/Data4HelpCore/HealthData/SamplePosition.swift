import Foundation

/// A position in the (start, type, key) order of an individual's samples: pages continue after it.
package struct SamplePosition: Sendable, Equatable {
    package var startMs: Int64
    package var type: Int16
    package var key: Int64

    package init(startMs: Int64, type: Int16, key: Int64) {
        self.startMs = startMs
        self.type = type
        self.key = key
    }
}
