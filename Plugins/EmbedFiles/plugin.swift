import Foundation
import PackagePlugin

/// Compiles the files the server reads at start-up into the `EmbeddedFiles` module, so that the
/// executable runs from anywhere with nothing beside it: the SQL migrations, the OpenAPI
/// document and the page templates and scripts. Each file is an input, so a change to one
/// rebuilds the table. The list itself is made when SwiftPM loads the package, which an
/// incremental build does not always do: seen 2026-11-27, a new migration was not embedded until
/// `Package.swift` was touched (`make build` does that when a root holds a file newer than the
/// last build; a clean build always lists every file).
@main
struct EmbedFiles: BuildToolPlugin {
    /// Directories and files of the package that are embedded, by their path in the package.
    static let roots = ["migrations", "openapi/data4help.yaml", "Sources/HTTPAPI/Pages/Templates"]

    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let package = context.package.directoryURL
        var paths: [String] = []
        for root in Self.roots {
            let url = package.appending(path: root)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else { continue }
            if !isDirectory.boolValue {
                paths.append(root)
                continue
            }
            for name in try FileManager.default.contentsOfDirectory(atPath: url.path).sorted() where !name.hasPrefix(".") {
                paths.append(root + "/" + name)
            }
        }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedFileTable.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(paths.count) files (migrations, contract, page templates)",
                executable: try context.tool(named: "EmbedFilesTool").url,
                arguments: [package.path, output.path] + paths,
                inputFiles: paths.map { package.appending(path: $0) },
                outputFiles: [output])
        ]
    }
}
