/* The catalog: one line per kernel. A kernel family adds its descriptors here and its file to meson.build. */
#include "core_internal.h"

extern const bk_kernel bk_noop;
extern const bk_kernel bk_compress_lzma, bk_compress_bzip2, bk_compress_zstd, bk_compress_zlib;

const bk_kernel *const bk_kernels[] = {
    &bk_noop,
    &bk_compress_lzma, &bk_compress_bzip2, &bk_compress_zstd, &bk_compress_zlib,
    NULL,
};
