import Data4HelpCore
import Foundation
import HTTPTypes
import HealthSharing
import Hummingbird
import NIOCore

/// `/api/users/imports`: files the individual's devices wrote (an Apple Health `export.xml`),
/// uploaded as they are and read in the background.
///
/// The body is streamed into PostgreSQL a chunk at a time, never held whole (its own limit,
/// `IMPORT_MAX_BYTES`). An upload cut off by the network keeps what arrived: following the IETF
/// draft "Resumable Uploads for HTTP", `HEAD`/`GET` tell `Upload-Offset`, and `PATCH` with
/// `Upload-Offset` appends from there; `Upload-Complete: ?0` on the `POST` or a `PATCH` says more
/// is to come (the draft's 104 interim response is not sent: the `POST` answers with the import's
/// `Location` once the part it carries has arrived).
struct ImportController {
    let imports: ImportService
    /// Bytes written to PostgreSQL at once.
    var chunkBytes = 1 << 20

    func addRoutes(to group: some RouterMethods<IndividualRequestContext>) {
        group.post("imports") { request, context in try await create(request, for: context.individual) }
        group.get("imports") { _, context in
            ImportListBody(imports: try await imports.list(for: context.individual).map(ImportBody.init))
        }
        group.get("imports/:importId") { _, context in
            guard let status = try await imports.find(try Self.importId(context), for: context.individual) else { throw Problem.notFound("import") }
            return Self.response(status, code: .ok)
        }
        group.patch("imports/:importId") { request, context in try await append(request, context: context) }
        group.delete("imports/:importId") { _, context in
            guard let status = try await imports.cancel(try Self.importId(context), for: context.individual) else { throw Problem.notFound("import") }
            return Self.response(status, code: .ok)
        }
    }

    /// Whether a request is an upload, which takes as long as its body takes to arrive (the
    /// request timeout is for answering, once a request is in).
    static func isUpload(_ request: Request) -> Bool {
        (request.method == .post || request.method == .patch)
            && (request.uri.path.hasPrefix("/api/users/imports") || request.uri.path == MeImportPages.uploadPath)
    }

    // MARK: - Handlers

    /// `POST`: a new import with the body as its file (also what `/me/imports` posts).
    func create(_ request: Request, for individual: IndividualID) async throws -> EditedResponse<ImportBody> {
        let contentType = request.headers[.contentType] ?? ""
        guard let format = ImportFormat(contentType: contentType) else {
            throw Problem(
                .unsupportedMediaType, slug: "unsupported-import-format", title: "Unsupported file format",
                detail: "Send the file with its Content-Type: application/zip (the Apple Health export.zip), application/xml (its export.xml), "
                    + "application/gpx+xml, application/vnd.garmin.tcx+xml or application/vnd.ant.fit (an activity)."
            )
        }
        try Self.requireUncoded(request)
        let complete = try Self.uploadComplete(request.headers)
        let created = try await imports.create(for: individual, format: format)
        try await receive(request.body, into: created.publicId, from: 0, for: individual)
        let status =
            complete ? try await imports.complete(created.publicId, for: individual) : try await imports.find(created.publicId, for: individual)
        guard let status else { throw Problem.notFound("import") }
        return Self.response(status, code: complete ? .accepted : .created, location: true)
    }

    private func append(_ request: Request, context: IndividualRequestContext) async throws -> EditedResponse<ImportBody> {
        let id = try Self.importId(context)
        let mediaType = MediaType.essence(of: request.headers[.contentType] ?? "")
        // The draft's type, tus's, or plain bytes.
        guard ["application/partial-upload", "application/offset+octet-stream", "application/octet-stream"].contains(mediaType) else {
            throw Problem(
                .unsupportedMediaType, slug: "unsupported-media-type", title: "Unsupported media type",
                detail: "Send a part of an upload as application/partial-upload."
            )
        }
        guard let offsetText = request.headers[.uploadOffset] else {
            throw Problem.invalidField("Upload-Offset", "the header is required: the byte offset this part starts at (HEAD tells it)")
        }
        guard let offset = Int64(offsetText), offset >= 0 else {
            throw Problem.invalidField("Upload-Offset", "must be a non-negative integer")
        }
        try Self.requireUncoded(request)
        let complete = try Self.uploadComplete(request.headers)
        try await receive(request.body, into: id, from: offset, for: context.individual)
        let status = complete ? try await imports.complete(id, for: context.individual) : try await imports.find(id, for: context.individual)
        guard let status else { throw Problem.notFound("import") }
        return Self.response(status, code: .ok)
    }

    /// Stores the body a chunk at a time from `offset`. What arrived before a broken connection
    /// is kept (the client resumes from `Upload-Offset`).
    private func receive(_ body: RequestBody, into id: UUID, from offset: Int64, for individual: IndividualID) async throws {
        var end = offset
        var pending: [UInt8] = []
        pending.reserveCapacity(chunkBytes)
        do {
            for try await buffer in body {
                var buffer = buffer
                while buffer.readableBytes > 0 {
                    let take = min(buffer.readableBytes, chunkBytes - pending.count)
                    pending.append(contentsOf: buffer.readBytes(length: take) ?? [])
                    if pending.count == chunkBytes {
                        end = try await imports.append(id, for: individual, at: end, bytes: pending)
                        pending.removeAll(keepingCapacity: true)
                    }
                }
            }
            if !pending.isEmpty || end == offset {
                end = try await imports.append(id, for: individual, at: end, bytes: pending)
            }
        } catch let refusal as ImportUploadRefusal {
            throw try await problem(refusal, id: id, for: individual)
        } catch {
            // The connection broke (or the server is stopping): keep what arrived, then give up.
            if !pending.isEmpty { _ = try? await imports.append(id, for: individual, at: end, bytes: pending) }
            throw error
        }
    }

    private func problem(_ refusal: ImportUploadRefusal, id: UUID, for individual: IndividualID) async throws -> Problem {
        switch refusal {
        case .notFound:
            return .notFound("import")
        case .notUploading(let state):
            return Problem(
                .conflict, slug: "import-not-uploading", title: "Upload over",
                detail: "This import is \(state.rawValue): it takes no more bytes."
            )
        case .offsetMismatch(let expected):
            return Problem(
                .conflict, slug: "mismatching-upload-offset", title: "Mismatching upload offset",
                detail: "The part must start at byte \(expected), where the bytes received end.", headers: [.uploadOffset: String(expected)]
            )
        case .tooLarge(let limit):
            try await imports.refuse(id, for: individual, reason: "the file is larger than the \(Self.size(limit)) an import may be")
            return Problem(
                .contentTooLarge, slug: "import-too-large", title: "File too large",
                detail: "An import may be at most \(Self.size(limit)) (\(limit) bytes)."
            )
        }
    }

    // MARK: - Pieces

    static func importId(_ context: some RequestContext) throws -> UUID {
        return try context.parameters.id("importId", missing: Problem.notFound("import"))
    }

    /// A file's bytes are stored as they arrive, a chunk at a time, and read later by the import:
    /// one sent coded (`Content-Encoding`) would be stored coded and fail as an unknown format, so
    /// it is refused (415) before anything is stored. A zip is compressed already.
    static func requireUncoded(_ request: Request) throws {
        try ContentCoding.requireIdentity(
            request.headers, detail: "Send the file as it is: an import's bytes are stored as they arrive (no Content-Encoding).")
    }

    /// `Upload-Complete` (an RFC 9651 boolean, `?1` when absent): whether this part ends the file.
    static func uploadComplete(_ headers: HTTPFields) throws -> Bool {
        switch headers[.uploadComplete] {
        case nil, "?1": true
        case "?0": false
        default: throw Problem.invalidField("Upload-Complete", "must be ?1 (this part ends the file) or ?0 (more parts follow)")
        }
    }

    /// The import with `code`; `Upload-Offset` and `Upload-Complete` tell a client (with `HEAD`)
    /// where to resume an upload.
    static func response(_ status: ImportRecord, code: HTTPResponse.Status, location: Bool = false) -> EditedResponse<ImportBody> {
        var headers: HTTPFields = [.uploadOffset: String(status.bytesReceived), .uploadComplete: status.state == .uploading ? "?0" : "?1"]
        if location { headers[.location] = "/api/users/imports/\(status.publicId.wireString)" }
        return EditedResponse(status: code, headers: headers, response: ImportBody(status))
    }

    static func size(_ bytes: Int64) -> String {
        bytes >= 1 << 30 && bytes % (1 << 30) == 0 ? "\(bytes >> 30) GiB" : "\(bytes >> 20) MiB"
    }
}

extension HTTPField.Name {
    static var uploadOffset: Self { Self("Upload-Offset")! }
    static var uploadComplete: Self { Self("Upload-Complete")! }
}

/// An import on the wire; every time is present, null until it happens.
struct ImportBody: ResponseEncodable, Sendable {
    struct Result: Encodable, Sendable {
        let types: [String: ImportFigures.TypeCounts]
        let rejected: [ImportFigures.Rejections]
        let skipped: [String: Int]
        let workouts: Int
    }

    let status: ImportRecord

    init(_ status: ImportRecord) {
        self.status = status
    }

    private enum CodingKeys: String, CodingKey {
        case id, format, state, createdAt, uploadedAt, startedAt, finishedAt, bytesReceived, bytesProcessed, records, result, failure, note
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(status.publicId.wireString, forKey: .id)
        try container.encode(status.format.rawValue, forKey: .format)
        try container.encode(status.state.rawValue, forKey: .state)
        try container.encode(WireFormat.timestamp(status.createdAt), forKey: .createdAt)
        try container.encode(status.uploadedAt.map(WireFormat.timestamp), forKey: .uploadedAt)
        try container.encode(status.startedAt.map(WireFormat.timestamp), forKey: .startedAt)
        try container.encode(status.finishedAt.map(WireFormat.timestamp), forKey: .finishedAt)
        try container.encode(status.bytesReceived, forKey: .bytesReceived)
        try container.encode(status.bytesProcessed, forKey: .bytesProcessed)
        try container.encode(status.records, forKey: .records)
        let figures = status.result
        try container.encode(
            Result(types: figures.types, rejected: figures.rejected, skipped: figures.skipped, workouts: figures.workouts), forKey: .result)
        try container.encode(status.failure, forKey: .failure)
        let note: String? =
            switch status.state {
            case .failed, .cancelled: "What was stored before the import stopped stays; importing the file again stores only what is missing."
            default: nil
            }
        try container.encode(note, forKey: .note)
    }
}

struct ImportListBody: ResponseEncodable, Sendable {
    let imports: [ImportBody]
}
