import Data4HelpCore
import DatabaseLink
import Foundation

/// What an import tells the organisations that subscribed to its individual's data: not a
/// `data.created` per batch (an Apple Health export is millions of samples), but, when the
/// import ends — done, failed or cancelled, for what it committed — one `data.imported` per
/// subscribed grant and kind of data it added: the span of time (within the grant's window) and,
/// when all of that kind's new items lie within the window, how many. The party reads the data
/// there by cursor (`…/data?type=&from=&to=`), like any granted data.
enum ImportAnnouncer {
    /// The events for `grants` (active, subscribed) from the import's final `figures` (JSON).
    @Sendable static func events(figures: String, grants: [SubscribedGrant]) throws -> [ImportedDataEvent] {
        let figures = try JSONDecoder().decode(ImportFigures.self, from: Data(figures.utf8))
        var events: [ImportedDataEvent] = []
        for grant in grants {
            for (kind, span) in (figures.spans ?? [:]).sorted(by: { $0.key < $1.key }) where grant.types.contains(kind) {
                guard let stored = figures.types[kind]?.accepted, stored > 0,
                    let within = span.clipped(fromMs: grant.fromMs, toMs: grant.toMs)
                else { continue }
                let count = within == span ? Int64(exactly: stored) : nil
                events.append(
                    ImportedDataEvent(
                        requestId: grant.requestId, thirdPartyId: grant.thirdPartyId,
                        data: ImportedDataReference(kind: kind, span: within, count: count)))
            }
        }
        return events
    }
}
