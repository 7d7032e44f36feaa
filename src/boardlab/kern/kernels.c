/* The catalog: one line per kernel. A kernel family adds its descriptors here and its file to meson.build. */
#include "core_internal.h"

extern const bk_kernel bk_noop;
extern const bk_kernel bk_crypto_evp;
extern const bk_kernel bk_crypto_afalg;
extern const bk_kernel bk_crypto_rng;

const bk_kernel *const bk_kernels[] = {
    &bk_noop,
    &bk_crypto_evp,
    &bk_crypto_afalg,
    &bk_crypto_rng,
    NULL,
};
