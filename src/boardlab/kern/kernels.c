/* The catalog: one line per kernel. A kernel family adds its descriptors here and its file to meson.build. */
#include "core_internal.h"

extern const bk_kernel bk_noop;
extern const bk_kernel bk_scimark_fft;
extern const bk_kernel bk_scimark_sor;
extern const bk_kernel bk_scimark_mc;
extern const bk_kernel bk_scimark_sparse;
extern const bk_kernel bk_scimark_lu;
extern const bk_kernel bk_scimark_composite;
extern const bk_kernel bk_mibench_gsm;

const bk_kernel *const bk_kernels[] = {
    &bk_noop,
    &bk_scimark_fft,
    &bk_scimark_sor,
    &bk_scimark_mc,
    &bk_scimark_sparse,
    &bk_scimark_lu,
    &bk_scimark_composite,
    &bk_mibench_gsm,
    NULL,
};
