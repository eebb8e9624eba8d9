/// A field the contract requires and allows to be null: encoded as `null` when nil, where a
/// synthesized `Encodable` would leave the key out. With it a response body's synthesized
/// conformance is its wire shape, instead of a hand-written `encode(to:)` listing every field.
@propertyWrapper
struct Nullable<Value: Encodable & Sendable>: Encodable, Sendable {
    var wrappedValue: Value?

    init(wrappedValue: Value?) {
        self.wrappedValue = wrappedValue
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}
