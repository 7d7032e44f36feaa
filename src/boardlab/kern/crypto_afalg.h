/* An AEAD through the kernel crypto API (AF_ALG) for kernels other than crypto.afalg (stream.pipeline's
 * encrypt stage): the same sockets, control messages and known-answer checks crypto.c uses. */
#ifndef BK_CRYPTO_AFALG_H
#define BK_CRYPTO_AFALG_H

#include "core.h"

typedef struct bk_afalg_aead bk_afalg_aead;

/* Opens alg (OpenSSL's name: aes-256-gcm, chacha20-poly1305, ...) keyed with key, after running the
 * standards' known answers through AF_ALG. NULL on failure with why filled; *unsupported is then true when
 * this kernel (or build) lacks AF_ALG or the algorithm, false for a real failure. */
BK_HIDDEN bk_afalg_aead *bk_afalg_aead_open(const char *alg, const uint8_t *key, char *why, size_t why_cap,
                                            bool *unsupported);
/* Encrypts len bytes of in to out and the 16-byte tag to tag, with a 12-byte iv and aad_len bytes of aad. */
BK_HIDDEN int bk_afalg_aead_seal(bk_afalg_aead *h, const uint8_t *iv, const uint8_t *aad, size_t aad_len,
                                 const uint8_t *in, size_t len, uint8_t *out, uint8_t *tag);
BK_HIDDEN const char *bk_afalg_aead_error(const bk_afalg_aead *h);
BK_HIDDEN void bk_afalg_aead_close(bk_afalg_aead *h);

#endif
