import PostgresNIO

/// An `int8[]` column read in one pass over its binary form, for arrays of many thousand elements
/// (an aggregate's members: half a million ids in a time grouping over 10,000 people).
/// PostgresNIO's generic `[Int64]` decodes each element through a slice and a type check of its
/// own, about 60 ns each; this reads the (length, value) pairs straight off the buffer.
///
/// Accepts exactly what PostgreSQL sends for a one-dimensional `int8[]` without NULLs (or an empty
/// array) and throws on anything else: another element type, more dimensions, a lower bound other
/// than 1 (as PostgresNIO's own), a NULL element, a length that is not 8, or a buffer whose size
/// is not what its header says.
package struct Int8ArrayColumn: PostgresDecodable, Sendable {
    package var values: [Int64]

    package init<JSONDecoder: PostgresJSONDecoder>(
        from buffer: inout ByteBuffer, type: PostgresDataType, format: PostgresFormat, context: PostgresDecodingContext<JSONDecoder>
    ) throws {
        guard format == .binary, type == .int8Array,
            let (dimensions, hasNulls, element) = buffer.readMultipleIntegers(endianness: .big, as: (Int32, Int32, UInt32).self),
            hasNulls == 0, PostgresDataType(element) == .int8
        else { throw PostgresDecodingError.Code.failure }
        guard dimensions == 1 else {
            guard dimensions == 0 else { throw PostgresDecodingError.Code.failure }
            values = []
            return
        }
        guard let (count, lowerBound) = buffer.readMultipleIntegers(endianness: .big, as: (Int32, Int32).self), count >= 0, lowerBound == 1,
            buffer.readableBytes == Int(count) * 12  // a 4-byte length and 8 bytes per element
        else { throw PostgresDecodingError.Code.failure }
        var values = [Int64]()
        values.reserveCapacity(Int(count))
        for _ in 0..<count {
            guard let (length, value) = buffer.readMultipleIntegers(endianness: .big, as: (Int32, Int64).self), length == 8 else {
                throw PostgresDecodingError.Code.failure
            }
            values.append(value)
        }
        self.values = values
    }
}
