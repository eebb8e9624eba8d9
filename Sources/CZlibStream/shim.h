#include <zlib.h>

// zlib's inflateInit2 and deflateInit2 are macros (they pass the library's version and the
// stream's size), which Swift does not import: these are the functions they stand for.
static inline int czlib_inflate_init(z_streamp stream, int window_bits) {
    return inflateInit2(stream, window_bits);
}

static inline int czlib_deflate_init(z_streamp stream, int level, int window_bits) {
    return deflateInit2(stream, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
}
