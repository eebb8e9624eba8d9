import Foundation

/// Files for the DeviceFiles tests: those `make device-fixtures` writes with encoders we did not
/// write (under `.build/device-fixtures`), and those committed under `Tests/Fixtures`.
enum DeviceFixtures {
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    struct Missing: Error, CustomStringConvertible {
        let name: String
        var description: String { "\(name) is missing: run `make device-fixtures` (make test does) to write it with fit-tool and GPSBabel" }
    }

    static func bytes(_ name: String) throws -> [UInt8] {
        let url = repositoryRoot.appendingPathComponent(".build/device-fixtures/\(name)")
        guard let data = FileManager.default.contents(atPath: url.path) else { throw Missing(name: name) }
        return [UInt8](data)
    }

    static func json(_ name: String) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(try bytes(name))) as? [String: Any] ?? [:]
    }

    static func source(_ path: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: repositoryRoot.appendingPathComponent(path)))
    }
}
