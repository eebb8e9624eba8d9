import UntrustedXML

/// Where a worker taking an import over goes on from (`imports.checkpoint`, JSON), committed
/// with each batch. An Apple Health export has its reader's position in `export.xml` (between
/// two records) and, in an `export.zip`, how many workout-route files are read once the export
/// is; an activity file (read whole, in one transaction) has `complete` once it is stored.
///
/// The position's fields sit at the top level, so a checkpoint written as a bare
/// `XMLReader.Position` (by earlier versions) reads as one.
struct ImportCheckpoint: Codable, Equatable {
    var offset: Int64
    var line: Int
    var open: [String]
    /// Set once `export.xml` is read: workout-route files of the ZIP read and stored, in path order.
    var routesRead: Int?
    /// The file is read and stored whole.
    var complete: Bool?

    init(_ position: XMLReader.Position) {
        offset = position.offset
        line = position.line
        open = position.open
    }

    /// An activity file stored whole: nothing left to read.
    static func complete(bytes: Int64) -> ImportCheckpoint {
        var checkpoint = ImportCheckpoint(XMLReader.Position(offset: bytes, line: 0, open: []))
        checkpoint.complete = true
        return checkpoint
    }

    var position: XMLReader.Position { XMLReader.Position(offset: offset, line: line, open: open) }
}
