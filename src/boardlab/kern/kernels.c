/* The catalog: one line per kernel. A kernel family adds its descriptors here and its file to meson.build. */
#include "core_internal.h"

extern const bk_kernel bk_noop;
extern const bk_kernel bk_mem_latency;
extern const bk_kernel bk_mem_bandwidth;

const bk_kernel *const bk_kernels[] = {
    &bk_noop,
    &bk_mem_latency,
    &bk_mem_bandwidth,
    NULL,
};
