import Foundation
import Hummingbird

extension Parameters {
    /// The UUID in the path parameter `name`; `missing` (the resource's "not found") when it is
    /// absent or not a UUID: a malformed id names nothing, so it is answered like an unknown one.
    func id(_ name: String, missing: @autoclosure () -> any Error) throws -> UUID {
        guard let id = get(name, as: UUID.self) else { throw missing() }
        return id
    }
}
