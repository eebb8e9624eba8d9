import PostgresNIO

/// A one-dimensional array parameter whose elements may be NULL, for the statements that write
/// many rows at once from arrays (`unnest`): PostgresNIO encodes arrays of non-optional elements
/// only. The binary form is PostgreSQL's own (`array_recv`): dimensions, a has-NULLs flag, the
/// element type, then the length and lower bound of the one dimension, and each element as its
/// length (-1 for NULL) and bytes.
package struct NullableArrayParameter<Element: PostgresArrayEncodable & PostgresNonThrowingEncodable>: PostgresNonThrowingEncodable {
    package var elements: [Element?]

    package init(_ elements: [Element?]) {
        self.elements = elements
    }

    package static var psqlType: PostgresDataType { Element.psqlArrayType }
    package static var psqlFormat: PostgresFormat { .binary }

    package func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        buffer.writeInteger(elements.isEmpty ? 0 : 1, as: Int32.self)
        buffer.writeInteger(elements.contains { $0 == nil } ? 1 : 0, as: Int32.self)
        buffer.writeInteger(Element.psqlType.rawValue)
        guard !elements.isEmpty else { return }
        buffer.writeInteger(Int32(clamping: elements.count))
        buffer.writeInteger(1, as: Int32.self)
        for element in elements {
            guard let element else {
                buffer.writeInteger(-1, as: Int32.self)
                continue
            }
            let lengthAt = buffer.writerIndex
            buffer.writeInteger(0, as: Int32.self)
            element.encode(into: &buffer, context: context)
            buffer.setInteger(Int32(clamping: buffer.writerIndex - lengthAt - 4), at: lengthAt)
        }
    }
}
