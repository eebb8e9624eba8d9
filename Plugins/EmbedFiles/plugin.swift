import Foundation
import PackagePlugin

/// Compiles the files the server reads at start-up into the `EmbeddedFiles` module, so that the
/// executable runs from anywhere with nothing beside it: the SQL migrations, the OpenAPI
/// document and the page templates and scripts. The list is made again at every build, so a new
/// migration or template is embedded without a step to remember; each file is an input, so a
/// change rebuilds the table.
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
