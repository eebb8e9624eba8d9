import Data4HelpCore
import DeviceFiles
import Foundation
import HealthSharing
import NIOCore
import RunEvents
import SOSManager
import ZlibCoding

/// Every decoder of bytes from outside, as one function from bytes to nothing: the entry points
/// of the libFuzzer targets (`data4help-fuzz`, `make fuzz`) and of the corpus replay in the test
/// suite. Each runs the decoder the way a request does, through to the typed value the handler
/// would use; a malformed input must end in a thrown error or nil, never a trap.
package enum DecoderFuzzing {
    /// The targets by name.
    package static let targets: [String: @Sendable (Data) -> Void] = [
        "upload": upload, "cursor": cursor, "aggregate": aggregate, "gpx": gpx, "form": form, "timestamp": timestamp,
        "signature": signature, "health-export": healthExport, "tcx": tcx, "fit": fit, "coded-body": codedBody,
    ]

    /// `POST /api/users/data`: the byte scanner (or Foundation's decoder), then each item's and
    /// each series' rules. What the scanner reads, Foundation's decoder must read the same: the
    /// answer never depends on which path ran (the scanner reads strings eight bytes at a time,
    /// and numbers, times and names from their bytes).
    package static func upload(_ data: Data) {
        let buffer = ByteBuffer(bytes: data)
        if let scanned = UploadScanner.scan(buffer) {
            let decoded = try? WireFormat.decoder().decode(IngestUploadBody.self, from: data).raw
            precondition(decoded == scanned, "the byte scanner and Foundation's decoder read an upload differently")
        }
        guard let upload = try? IngestUploadBody.upload(in: buffer) else { return }
        let rules = IngestRules(), now = Date()
        for item in upload.items { _ = try? rules.validate(item, now: now) }
        for series in upload.series { _ = rules.validate(series, now: now) }
    }

    /// A body sent with `Content-Encoding: gzip` or `deflate` (the first byte's low bit picks
    /// which). libFuzzer cannot mend a stream's checksum, so the rest is taken three ways: as a
    /// coded stream (decoded within a 1 MiB limit, then read as an upload); as plain bytes coded
    /// by our encoder, which must decode to themselves exactly at their length as the limit and
    /// be refused a byte under it; and that coding with one byte changed (where the first byte's
    /// other bits say), which must decode to at most the limit or be refused.
    package static func codedBody(_ data: Data) {
        guard let first = data.first else { return }
        let coding: ContentCoding = first & 1 == 0 ? .gzip : .deflate
        let rest = Array(data.dropFirst())
        if let body = try? coding.decode(ByteBuffer(bytes: rest), limit: 1 << 20) {
            precondition(body.readableBytes <= 1 << 20, "decoded past the limit")
            upload(Data(body.readableBytesView))
        }
        guard let format = coding.format, var coded = ZlibDeflate.compress(rest, format: format) else { preconditionFailure("our coding failed") }
        precondition((try? coding.decode(ByteBuffer(bytes: coded), limit: rest.count)) == ByteBuffer(bytes: rest), "our coding does not decode")
        if !rest.isEmpty {
            precondition((try? coding.decode(ByteBuffer(bytes: coded), limit: rest.count - 1)) == nil, "decoded past the limit")
        }
        guard !coded.isEmpty else { return }
        let at = Int(first >> 1) % coded.count
        coded[at] ^= 0x5A
        if let changed = try? coding.decode(ByteBuffer(bytes: coded), limit: rest.count) {
            precondition(changed.readableBytes <= rest.count, "decoded past the limit")
        }
    }

    /// Pagination cursors: the authenticated codec on the raw text, and — since a forged cursor
    /// never gets past the tag — the field parsers on what a cursor could carry once authenticated.
    package static func cursor(_ data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        _ = KeysetPagination.decodeCursor(text)
        _ = try? OwnDataCursor.decodeSample(text, order: .descending)
        let fields = text.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        guard let tag = fields.first else { return }
        let signed = CursorCodec.encode(tag, Array(fields.dropFirst()))
        for order in [ListingOrder.ascending, .descending] {
            _ = try? OwnDataCursor.decodeSample(signed, order: order)
            _ = try? OwnDataCursor.decodeLocation(signed, order: order)
        }
        _ = KeysetPagination.decodeCursor(signed)
    }

    /// `POST /api/thirdparties/aggregates`: JSON, then the query grammar.
    package static func aggregate(_ data: Data) {
        guard let form = try? JSONBody(limit: .max).decode(AggregateSpecForm.self, bytes: ByteBuffer(bytes: data)) else { return }
        _ = try? form.spec(defaultEpsilon: Epsilon(hundredths: 50), maximum: Epsilon(hundredths: 100))
    }

    /// A run event's course as GPX.
    package static func gpx(_ data: Data) {
        course(data, format: .gpx)
    }

    /// A run event's course as TCX.
    package static func tcx(_ data: Data) {
        course(data, format: .tcx)
    }

    /// A FIT file, as a course and as an import reads it (every record through the ingest rules).
    package static func fit(_ data: Data) {
        course(data, format: .fit)
        guard let document = try? FITActivityReader.read([UInt8](data)) else { return }
        let rules = IngestRules(), now = Date()
        for case .sample(let raw) in ActivityImport.items(document) { _ = try? rules.validate(raw, now: now) }
    }

    private static func course(_ data: Data, format: ActivityFileFormat) {
        guard let points = try? CoursePath.points(from: [UInt8](data), format: format) else { return }
        _ = try? GeoPath(points: points, field: "body")
    }

    /// An Apple Health `export.xml` as an import reads it: fed in pieces (of 1 to 256 bytes, the
    /// first byte says how long, so piece boundaries fall everywhere), each record through the
    /// ingest rules.
    package static func healthExport(_ data: Data) {
        guard let first = data.first else { return }
        let size = Int(first) + 1
        let rules = IngestRules(), now = Date()
        var reader = AppleHealthExportReader()
        let check: (AppleHealthExportReader.Item) -> Void = { item in
            if case .sample(let raw) = item { _ = try? rules.validate(raw, now: now) }
        }
        do {
            var start = data.startIndex + 1
            while start < data.endIndex {
                let end = min(data.endIndex, start + size)
                try reader.feed(data[start..<end], check)
                start = end
            }
            try reader.finish(check)
        } catch {
            return
        }
    }

    /// A portal form post: the URL-encoded pairs, then the AutomatedSOS form and an aggregate
    /// form, the two that turn form text into numbers.
    package static func form(_ data: Data) {
        let form = PortalForm(text: String(decoding: data, as: UTF8.self))
        if let settings = try? MeSOSPages.form(form) { _ = try? settings.settings(allowPrivateNetworks: false) }
        if let spec = try? PortalAggregatePages.spec(form) {
            _ = try? spec.spec(defaultEpsilon: Epsilon(hundredths: 50), maximum: Epsilon(hundredths: 100))
        }
    }

    /// RFC 3339 instants, as every time field and query parameter is read.
    package static func timestamp(_ data: Data) {
        _ = RFC3339Timestamp.parse(String(decoding: data, as: UTF8.self))
    }

    /// The dispatch centre's signature header: the first line is the header, the rest the body.
    package static func signature(_ data: Data) {
        let parts = data.split(separator: UInt8(ascii: "\n"), maxSplits: 1, omittingEmptySubsequences: false)
        let header = String(decoding: parts.first ?? Data(), as: UTF8.self)
        _ = WebhookSignature.verify(header: header, secret: "fuzzing secret", body: Array(parts.count > 1 ? parts[1] : Data()))
    }
}
