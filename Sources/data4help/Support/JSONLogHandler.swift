import Foundation
import Logging

/// One JSON object per log line (`time`, `level`, `logger`, `message`, then the metadata),
/// so that log collectors can index fields without parsing free text.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    init(label: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields: [String: String] = [:]
        var all = metadataProvider?.get() ?? [:]
        all.merge(metadata) { $1 }
        all.merge(event.metadata ?? [:]) { $1 }
        for (key, value) in all {
            fields[key] = value.description
        }
        fields["time"] = Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
        fields["level"] = event.level.rawValue
        fields["logger"] = label
        fields["message"] = event.message.description
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard var line = try? encoder.encode(fields) else { return }
        line.append(UInt8(ascii: "\n"))
        FileHandle.standardOutput.write(line)
    }
}
