/// The files the server reads at start-up, compiled into the executable by the `EmbedFiles` build
/// plugin: `table` (generated at build time from the package's `migrations/`,
/// `openapi/data4help.yaml` and `Sources/HTTPAPI/Pages/Templates/`) maps each file's path in the
/// package to its bytes in base64. Only the `data4help` executable links it and hands it to the
/// HTTP layer (`AppConfiguration.builtInFiles`), so that the fuzzing build — whose compiler flags
/// reach every target, the plugin's tool included — never builds the plugin.
package enum EmbeddedFiles {
    package static var all: [String: String] { table }
}
