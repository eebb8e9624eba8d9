import Data4HelpCore
import Foundation
import Logging

/// One JSON object per log line (`time`, `level`, `logger`, `message`, then the metadata),
/// so that log collectors can index fields without parsing free text.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    /// Standard output for `serve`; a bench's servers write theirs to /dev/null.
    let output: FileHandle

    init(label: String, metadataProvider: Logger.MetadataProvider? = nil, output: FileHandle = .standardOutput) {
        self.label = label
        self.metadataProvider = metadataProvider
        self.output = output
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
        fields["time"] = WireFormat.timestamp(Date())
        fields["level"] = event.level.rawValue
        fields["logger"] = label
        fields["message"] = event.message.description
        // Written by hand (one line per request at the default level): Foundation's encoder and
        // date formatter cost more than the rest of a cached read.
        var line = JSONOutput(capacity: 256)
        line.raw("{")
        for (index, key) in fields.keys.sorted().enumerated() {
            if index > 0 { line.raw(",") }
            line.string(key)
            line.raw(":")
            line.string(fields[key] ?? "")
        }
        line.raw("}\n")
        line.bytes.withUnsafeBufferPointer { output.write(Data(buffer: $0)) }
    }
}
