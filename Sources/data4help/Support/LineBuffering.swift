#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// Makes standard output line-buffered even when it is a file or a pipe (a benchmark's report
/// then shows as it comes, not when the process ends). Called once, before any other output.
func lineBufferStandardOutput() {
    #if canImport(Glibc)
    setvbuf(stdout, nil, _IOLBF, 0)
    #endif
}
