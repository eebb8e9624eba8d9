import AccessManager
import Foundation
import Hummingbird
import RunEvents

/// What a spectator asked for: the protocol's version and, in version 2, whom they follow and
/// how often they want the whole field.
struct LiveOptions {
    var version = 2
    var view = LiveView.wholeField

    init(_ query: Hummingbird.Parameters) throws {
        var fields = FieldValidator()
        version =
            fields.optional("v", query["v"].map(String.init)) { (raw: String) throws(InvalidValue) -> Int in
                guard raw == "1" || raw == "2" else { throw InvalidValue("must be 1 or 2") }
                return raw == "1" ? 1 : 2
            } ?? 2
        let follow = fields.optional("follow", query["follow"].map(String.init)) { (raw: String) throws(InvalidValue) in
            try Self.runners(raw.split(separator: ",", omittingEmptySubsequences: false).map(String.init))
        }
        let every = fields.optional("fieldEveryMs", query["fieldEveryMs"].map(String.init), Self.fieldEvery)
        if version == 1, follow != nil || every != nil {
            fields.fail(follow != nil ? "follow" : "fieldEveryMs", "needs version 2 of the live protocol (leave v out)")
        }
        try fields.finish()
        view = LiveView(follow: follow ?? [], fieldEvery: every ?? nil)
    }

    /// The view a spectator's message asks for (`{"follow":[id…],"fieldEveryMs":n}`, either may
    /// be left out to keep what it was).
    static func view(from text: String, over current: LiveView) throws -> LiveView {
        struct Message: Decodable {
            var follow: [String]?
            var fieldEveryMs: Int?
        }
        guard let message = try? JSONDecoder().decode(Message.self, from: Data(text.utf8)) else {
            throw Problem.malformedBody(#"A message is {"follow":[runnerId…],"fieldEveryMs":n}."#)
        }
        var fields = FieldValidator()
        let follow = fields.optional("follow", message.follow, runners)
        let every = fields.optional("fieldEveryMs", message.fieldEveryMs.map(String.init), fieldEvery)
        try fields.finish()
        return LiveView(follow: follow ?? current.follow, fieldEvery: every ?? current.fieldEvery)
    }

    private static func runners(_ ids: [String]) throws(InvalidValue) -> Set<UUID> {
        guard ids.count <= LiveView.maximumFollowed else { throw InvalidValue("must name at most \(LiveView.maximumFollowed) runners") }
        var set = Set<UUID>()
        for id in ids {
            guard let runner = UUID(uuidString: id) else { throw InvalidValue("must be runner ids separated by commas") }
            set.insert(runner)
        }
        return set
    }

    /// 0: the whole field at every batch; else 100 ms to 60 s.
    private static func fieldEvery(_ raw: String) throws(InvalidValue) -> Duration? {
        guard let milliseconds = Int(raw), milliseconds == 0 || (100...60_000).contains(milliseconds) else {
            throw InvalidValue("must be 0 (every update) or 100 to 60000 milliseconds")
        }
        return milliseconds == 0 ? nil : .milliseconds(milliseconds)
    }
}
