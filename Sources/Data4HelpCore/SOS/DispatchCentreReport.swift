import Foundation

/// What the dispatch centre reports back.
package enum DispatchCentreReport: String, Sendable {
    case acknowledged, resolved
}
