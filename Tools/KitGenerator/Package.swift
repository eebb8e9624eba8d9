// swift-tools-version:6.0
import PackageDescription

/// The generator of Data4HelpKit's client code, kept out of the main package so that building the
/// server never builds it: `make kit` regenerates `Sources/Data4HelpKit/Generated`, `make kit-check`
/// (part of `make test`) regenerates into a scratch directory and fails when the committed code differs.
let package = Package(
    name: "KitGenerator",
    dependencies: [.package(url: "https://github.com/apple/swift-openapi-generator.git", exact: "1.14.3")],
    targets: []
)
