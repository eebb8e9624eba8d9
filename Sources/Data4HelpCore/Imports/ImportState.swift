/// Where an import stands (`imports.state`).
package enum ImportState: String, Sendable, CaseIterable {
    /// The file is arriving (or an interrupted upload waits to be resumed).
    case uploading
    /// Received whole; waiting for a worker.
    case queued
    /// A worker reads it, committing as it goes.
    case running
    case done
    /// Stopped, with a reason for its owner; what was committed stays.
    case failed
    /// Stopped by its owner; what was committed stays.
    case cancelled

    /// Whether the import can change no more.
    package var isFinal: Bool { self == .done || self == .failed || self == .cancelled }
}

/// The file formats an import reads (`imports.format`), named by what a client sends.
package enum ImportFormat: String, Sendable, CaseIterable {
    /// `export.xml` of the iPhone Health app, sent as `application/xml`.
    case appleHealthXML = "apple-health-xml"
    /// The `export.zip` the iPhone Health app writes, sent as `application/zip`.
    case appleHealthZIP = "apple-health-zip"
    /// An activity recorded as GPX, sent as `application/gpx+xml`.
    case gpx
    /// An activity recorded as Garmin's Training Center XML, sent as `application/vnd.garmin.tcx+xml`.
    case tcx
    /// An activity file in Garmin's FIT protocol, sent as `application/vnd.ant.fit`.
    case fit

    /// The format of a body of `contentType` (parameters such as `charset` ignored).
    package init?(contentType: String) {
        let mediaType = MediaType.essence(of: contentType)
        switch mediaType {
        case "application/xml", "text/xml": self = .appleHealthXML
        case "application/zip", "application/x-zip-compressed": self = .appleHealthZIP
        case "application/gpx+xml", "application/gpx": self = .gpx
        case "application/vnd.garmin.tcx+xml", "application/tcx+xml": self = .tcx
        case "application/vnd.ant.fit", "application/fit": self = .fit
        default: return nil
        }
    }
}

/// Why a piece of an upload was not added.
package enum ImportUploadRefusal: Error, Equatable, Sendable {
    case notFound
    /// The import is no longer receiving bytes (queued, running or over).
    case notUploading(ImportState)
    /// The piece does not start where the bytes received end.
    case offsetMismatch(expected: Int64)
    /// The file would pass `IMPORT_MAX_BYTES`.
    case tooLarge(limit: Int64)
}
