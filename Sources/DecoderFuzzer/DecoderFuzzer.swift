import Foundation
import HTTPAPI

// The libFuzzer driver over `DecoderFuzzing`'s targets (`make fuzz` builds it with
// `-sanitize=fuzzer -D FUZZING`; the target is chosen by FUZZ_TARGET). Built without FUZZING
// it replays inputs: `data4help-fuzz TARGET FILE…` runs each file through the target once, the
// way to reproduce a crash libFuzzer saved.

#if FUZZING
nonisolated(unsafe) private var selected: (@Sendable (Data) -> Void)?

/// libFuzzer's driver (compiler-rt), started from our own entry point: SwiftPM links an
/// executable's `main` to the module's (`--defsym main=DecoderFuzzer_main`), not to libFuzzer's.
@_silgen_name("LLVMFuzzerRunDriver")
private func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

@_cdecl("DecoderFuzzer_main")
public func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc, arguments = argv
    return runFuzzerDriver(&count, &arguments) { bytes, size in fuzzOneInput(bytes, size) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    if selected == nil {
        let name = ProcessInfo.processInfo.environment["FUZZ_TARGET"] ?? ""
        guard let target = DecoderFuzzing.targets[name] else {
            fatalError("FUZZ_TARGET must be one of \(DecoderFuzzing.targets.keys.sorted())")
        }
        selected = target
    }
    selected!(Data(bytes: bytes, count: count))
    return 0
}
#else
@main
struct DecoderFuzzer {
    static func main() throws {
        let arguments = CommandLine.arguments.dropFirst()
        guard let name = arguments.first, let target = DecoderFuzzing.targets[name] else {
            print("usage: data4help-fuzz TARGET FILE…   (targets: \(DecoderFuzzing.targets.keys.sorted().joined(separator: ", ")))")
            exit(2)
        }
        for path in arguments.dropFirst() {
            target(try Data(contentsOf: URL(fileURLWithPath: path)))
            print("\(path): ok")
        }
    }
}
#endif
