import Hummingbird

/// A list answered whole, `{"items": [...]}`, for lists that stay short (a person's care links,
/// invitations, the people they care for); longer ones are `Page`s.
struct ItemList<Item: Encodable & Sendable>: ResponseEncodable, Sendable {
    let items: [Item]
}
