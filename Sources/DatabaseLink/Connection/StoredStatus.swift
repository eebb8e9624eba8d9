import Data4HelpCore
import PostgresNIO

// Closed sets stored as text under a `CHECK (status IN (…))` constraint are decoded here, at the
// database's edge, so that no component compares status strings; they bind as their raw value.
// postgres-nio codes any `RawRepresentable` over a codable raw value (a stored text outside the
// set fails to decode); these declare which of Data4HelpCore's sets are stored.
extension AccessStatus: PostgresEncodable, PostgresDecodable {}
extension SOSIncidentStatus: PostgresEncodable, PostgresDecodable {}
extension AggregateQueryStatus: PostgresEncodable, PostgresDecodable {
    // Also `Codable` (it is part of a stored answer's JSON), for which postgres-nio offers JSON
    // coding too: these say that the column is text.
    package static var psqlType: PostgresDataType { .text }
    package static var psqlFormat: PostgresFormat { String.psqlFormat }

    package func encode<JSONEncoder: PostgresJSONEncoder>(into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        rawValue.encode(into: &byteBuffer, context: context)
    }

    package init<JSONDecoder: PostgresJSONDecoder>(
        from buffer: inout ByteBuffer, type: PostgresDataType, format: PostgresFormat, context: PostgresDecodingContext<JSONDecoder>
    ) throws {
        guard let value = Self(rawValue: try String(from: &buffer, type: type, format: format, context: context)) else {
            throw PostgresDecodingError.Code.failure
        }
        self = value
    }
}
extension AggregateSubscriptionStatus: PostgresEncodable, PostgresDecodable {}
extension ImportState: PostgresEncodable, PostgresDecodable {}
extension ImportFormat: PostgresEncodable, PostgresDecodable {}
