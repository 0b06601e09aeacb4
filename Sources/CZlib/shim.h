// zlib for Swift (Debian: zlib1g-dev). deflateInit2/inflateInit2 are macros.
#ifndef SCROLLSYNC_CZLIB_SHIM_H
#define SCROLLSYNC_CZLIB_SHIM_H
#include <zlib.h>

static inline int scrollsync_deflateInit2(z_streamp strm, int level, int windowBits, int memLevel) {
    return deflateInit2(strm, level, Z_DEFLATED, windowBits, memLevel, Z_DEFAULT_STRATEGY);
}
static inline int scrollsync_inflateInit2(z_streamp strm, int windowBits) {
    return inflateInit2(strm, windowBits);
}
#endif
